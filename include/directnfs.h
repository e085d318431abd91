/*
 * directnfs.h — C interface of directnfs, an NFS client (NFSv3, or NFSv4.1
 * with vers=4.1 in the URL or nfs_version: nfsv4.1 in the dnfstab) that runs
 * inside the process that uses it (libdirectnfs.so / libdirectnfs.a).
 *
 *   cc app.c $(pkg-config --cflags --libs directnfs)
 *   cc app.c $(pkg-config --static --cflags --libs directnfs)   # libdirectnfs.a
 *
 * CONVENTIONS (apply to every function unless its comment says otherwise)
 *
 * Errors.   Functions returning int, ssize_t or int64_t return a value >= 0
 *           on success and a NEGATIVE errno on failure (-ENOENT, -EEXIST,
 *           -EIO, -ETIMEDOUT, -EINVAL ...), the way the Linux kernel does.
 *           Functions returning a pointer return NULL on failure and set
 *           errno (positive). In both cases dnfs_last_error() then describes
 *           the failure in words (operation, path, NFS status).
 *
 * Strings.  Every `const char *` argument is a NUL-terminated UTF-8 string
 *           that is only read during the call; the library keeps no pointer
 *           to it. NULL where a string is required gives -EINVAL.
 *
 * Paths.    A path given to dnfs_open, dnfs_stat, dnfs_unlink ... names a
 *           file of the client's export. An absolute path ("/db/x.dbf") is
 *           taken from the export root; a relative one ("x.dbf") from the
 *           client's target directory (dnfs_client_target): the path part
 *           of the URL below the export, or of the mount: path given to
 *           dnfs_client_open_config.
 *
 * Threads.  Every object may be used from any thread, and clients and files
 *           from many threads AT ONCE: concurrent dnfs_pread/dnfs_pwrite on
 *           one file are sent in parallel (the application orders its own
 *           I/O, as a database does). A batch may also be called from any
 *           thread, but calls on one batch are serialized (a thread blocked
 *           in dnfs_batch_wait holds that batch). Completions are only ever
 *           seen by the thread that calls dnfs_batch_wait: the library runs
 *           no callbacks. Replies are received by the calling threads
 *           themselves while they wait (one at a time, for everyone), or
 *           by one library thread for I/O nobody waits for: a thread
 *           blocked in a dnfs_ call may be moving other threads' data.
 *
 * Lifetime. Objects are freed by their close/free function, once; using an
 *           object after that (or from another thread during it) is
 *           undefined, as with close(2). A file or batch keeps its client's
 *           connections alive: closing the client first is allowed, and the
 *           connections close when the last file and batch are gone.
 *
 * Safety.   No Rust panic ever crosses this interface: an internal error
 *           becomes -EIO with a message (Rust's default panic hook also
 *           prints that message on stderr). Nothing here calls abort() or
 *           exit(), installs signal handlers, or writes to stdout. The only
 *           other output is the alert log: one line per event an operator
 *           must know about (a path down or up, a server restart, a MOUNT
 *           being retried), on stderr unless the URL/config option
 *           alert_log= or the environment DIRECTNFS_ALERT_LOG sends it
 *           elsewhere (a file, syslog) or turns it off. Neither a server
 *           that resets its connections nor a stderr pipe whose reader is
 *           gone makes the library raise SIGPIPE (socket writes are sent
 *           with MSG_NOSIGNAL; an alert line to a pipe is written with
 *           SIGPIPE blocked in that thread), and the library's own
 *           threads block every signal: the program's signals reach the
 *           program's threads.
 *
 * Fork.     Clients, files and batches belong to the process that opened
 *           them: they share its connections (and on NFSv4.1 its session
 *           and locks). In the child of fork(2) every call on one of the
 *           parent's fails with -EBADF (NULL and errno EBADF for
 *           dnfs_batch_new), and dnfs_close, dnfs_batch_free and
 *           dnfs_client_close return -EBADF and leave it alone (freeing it
 *           would close what the parent still uses; its memory stays
 *           allocated in the child). A child that needs NFS opens a client
 *           of its own (dnfs_client_open_url, dnfs_client_open_config).
 *           The interception library and the SQLite VFS do this for their
 *           programs themselves.
 *
 * Sharing.  Files may be removed and re-created by other processes or
 *           hosts: a name whose cached file handle went stale (ESTALE) is
 *           looked up again once before an error is returned. An OPEN
 *           dnfs_file whose file was removed elsewhere fails with -ESTALE,
 *           as with the kernel client.
 *
 * Durability. Writes are FILE_SYNC by default: when dnfs_pwrite returns, the
 *           data is on the server's stable storage. With the URL/config
 *           option stable=unstable, writes are durable after dnfs_fsync,
 *           and write-behind is on (write_behind=, default 8 MiB per file,
 *           0 = off): dnfs_pwrite returns once the data is copied and
 *           sent, like write(2) to a local file; dnfs_fsync waits for those
 *           writes, then commits. An error of such a write (ENOSPC, EDQUOT,
 *           EIO, ...) is returned by the next dnfs_fsync of the file, or by
 *           dnfs_close if no dnfs_fsync came first, once. Reads see data
 *           still in flight, and writes over it land after it
 *           (dnfs_pread/dnfs_pwrite and dnfs_batch_read/dnfs_batch_write:
 *           a batch submission waits for such writes first; a read or
 *           write of a batch I/O's bytes before that I/O completes is
 *           not ordered with it, as with aio). write_behind_client= (default 64 MiB) bounds
 *           the bytes in flight over all files of the client: a writer
 *           past it waits for replies.
 */
#ifndef DIRECTNFS_H
#define DIRECTNFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* ssize_t */

#ifdef __cplusplus
extern "C" {
#endif

#define DNFS_VERSION_MAJOR 0
#define DNFS_VERSION_MINOR 1
#define DNFS_VERSION_PATCH 0

/* Opaque handles. */
typedef struct dnfs_client dnfs_client; /* a mounted export of one server */
typedef struct dnfs_file dnfs_file;     /* an open file */
typedef struct dnfs_batch dnfs_batch;   /* a set of asynchronous I/Os */

/* ---------------------------------------------------------------------
 * Library
 * --------------------------------------------------------------------- */

/* The library version, e.g. "0.1.0". Static storage: never free it. */
const char *dnfs_version(void);

/* A message describing the most recent failed call made BY THIS THREAD
 * ("LOOKUP /db/x: NFS3ERR_NOENT (No such file or directory)"), or "" if
 * none failed yet. Successful calls do not clear it. The string belongs to
 * the library and stays valid until this thread's next failing call. */
const char *dnfs_last_error(void);

/* ---------------------------------------------------------------------
 * Clients
 * --------------------------------------------------------------------- */

/* Mounts the export holding the path of an NFS URL:
 *   nfs://host[:port]/export/dir?nfsport=N&mountport=M&connections=4&...
 * (keys as in dnfstab; see the directnfs documentation). The URL's path
 * below the export becomes the client's target directory.
 * "nfs://host//dir" says the export is "/". Returns a client to free with
 * dnfs_client_close, or NULL and errno (EINVAL bad URL,
 * ECONNREFUSED/ETIMEDOUT server unreachable, ENOENT/EACCES export refused).
 * Blocks while connecting and mounting; while the server cannot be reached
 * (down, restarting, taking over) it keeps trying for up to mnt_timeout
 * (600 s unless the URL sets mnt_timeout=SECONDS) before failing. */
dnfs_client *dnfs_client_open_url(const char *url);

/* Mounts the export that holds `path`, a local-looking path under a
 * `mount:` prefix of a dnfstab (oranfstab syntax). The configuration is
 * `config_path` if not NULL (it must exist), else the first of
 * $DIRECTNFS_TAB, ./dnfstab, /etc/dnfstab. The server block's paths,
 * export and options are used; `path` below its mount prefix becomes the
 * client's target directory. Returns NULL and errno EINVAL when the
 * configuration is missing or wrong or `path` is under no mount: prefix
 * (dnfs_last_error names file and line), or as dnfs_client_open_url when
 * mounting fails (waiting up to the block's mnt_timeout: for a server that
 * cannot be reached). */
dnfs_client *dnfs_client_open_config(const char *config_path, const char *path);

/* Releases the client. Returns 0; NULL is accepted and ignored. Open files
 * and batches of the client stay usable (see Lifetime above). */
int dnfs_client_close(dnfs_client *client);

/* The export mounted ("/vol/oradata") and the target directory below it
 * ("/" or "/dir"). Owned by the client; valid until dnfs_client_close.
 * NULL only if `client` is NULL. */
const char *dnfs_client_export(const dnfs_client *client);
const char *dnfs_client_target(const dnfs_client *client);

/* A JSON object describing the client, written to buf (at most len bytes,
 * always NUL-terminated when len > 0), snprintf-style: returns the length
 * of the full JSON text (excluding the NUL) — if that is >= len the output
 * was truncated — or a negative errno. Contents:
 *   {"export":..,"target":..,"rtmax":..,"wtmax":..,"server_rtmax":..,
 *    "server_wtmax":..,"connections":..,"stable":"file_sync",
 *    "ops":{"reads":..,"writes":..,"bytes_read":..,"bytes_written":..,
 *           "fsyncs":..,"metadata_ops":..,"batch_ops":..,"errors":..},
 *    "engine":{"servers":[...],"files":[...]}}
 * "ops" counts calls made through this C library on this client (its files
 * and batches included). "engine" is the client's own statistics snapshot,
 * the model `dnfs stats --json` prints for each process (its
 * "processes"[i]."stats", which sums every client of the process; every
 * process publishes it unless the URL/config says stats=off or the
 * environment DIRECTNFS_STATS=off): per server, path and channel the
 * RPC counts, bytes, retransmissions, failovers and latency histograms, and
 * per file its I/O totals (every open file; closed ones up to a bound of
 * 1,024 records, beyond which they are summed in one entry whose "path" is
 * "(evicted files)"). Fields may be added, never removed. */
ssize_t dnfs_stats_json(const dnfs_client *client, char *buf, size_t len);

/* ---------------------------------------------------------------------
 * Files
 * --------------------------------------------------------------------- */

/* dnfs_open flags (our own values: do not pass O_CREAT etc.). */
#define DNFS_O_CREAT 0x1 /* create the file if it does not exist */
#define DNFS_O_EXCL 0x2  /* with DNFS_O_CREAT: fail with -EEXIST if it exists
                            (NFS EXCLUSIVE create: safe to retry, atomic on
                            the server, usable as a lock across hosts) */
#define DNFS_O_TRUNC 0x4 /* truncate to length 0 */

/* Opens (or creates) a file. `mode` is the permission bits of a created
 * file (0 means 0644; no umask is applied). Every file is open for reading and writing; NFS
 * checks permissions per operation, so a read-only file fails at the first
 * dnfs_pwrite (-EACCES). Unknown flag bits or DNFS_O_EXCL without
 * DNFS_O_CREAT give EINVAL. Returns NULL and errno on failure. */
dnfs_file *dnfs_open(dnfs_client *client, const char *path, int flags, unsigned mode);

/* Closes the file. Returns 0, or in stable=unstable mode with write-behind
 * a negative errno: the error of a write-behind write not yet reported by
 * dnfs_fsync (close waits for the writes in flight). The file is closed
 * either way. Data written in FILE_SYNC mode is already durable; in
 * stable=unstable mode call dnfs_fsync first: close does not commit.
 * NULL is ignored. */
int dnfs_close(dnfs_file *file);

/* Reads up to len bytes at offset into buf. Returns the number of bytes
 * read, fewer than len only at end of file (0 at or past it), or a
 * negative errno. A server may answer with fewer bytes before the end of
 * the file; the rest is then asked for again until buf is full or the
 * server reports the end (a server answering 0 bytes without reporting
 * the end gives -EIO rather than a loop). buf is written only during the
 * call. Large reads are split at the server's transfer size and sent in
 * parallel. */
ssize_t dnfs_pread(dnfs_file *file, void *buf, size_t len, int64_t offset);

/* Writes len bytes from buf at offset. Returns len or a negative errno;
 * never a partial count. Durable on return in FILE_SYNC mode (default).
 * With write-behind (stable=unstable) it returns once the data is copied
 * and sent; its error comes from dnfs_fsync or dnfs_close (see
 * Durability). buf is only read during the call. */
ssize_t dnfs_pwrite(dnfs_file *file, const void *buf, size_t len, int64_t offset);

/* Makes all writes acknowledged so far durable: nothing to do in FILE_SYNC
 * mode, COMMIT (and resend after a server restart) in unstable mode, after
 * waiting for the file's write-behind writes (whose error, if one failed
 * since the last report, is returned once).
 * Returns 0 once every byte is proven durable, or a negative errno (-EIO
 * also when the server kept restarting while data was re-sent); on failure
 * nothing is dropped and a later dnfs_fsync tries again. */
int dnfs_fsync(dnfs_file *file);

/* Truncates or extends the file to `size` bytes. 0 or negative errno. */
int dnfs_ftruncate(dnfs_file *file, int64_t size);

/* I/O classes (the book's "I/O classes" chapter). */
#define DNFS_IO_LOG 0  /* redo, WAL, journal: on each path's log lane, never
                          queued behind bulk I/O */
#define DNFS_IO_DATA 1 /* random reads and writes (the default) */
#define DNFS_IO_BULK 2 /* scans, copies, backups: kept off the log lanes */

/* Sets the I/O class of the file's reads and writes (DNFS_IO_*). Honoured
 * unless the client's options say io_classes=off. 0, or -EINVAL for an
 * unknown class. */
int dnfs_set_io_class(dnfs_file *file, int io_class);

/* ---------------------------------------------------------------------
 * Byte-range locks (NFSv4.1 only)
 *
 * Advisory locks held on the server (NFSv4.1 LOCK and LOCKU, RFC 8881
 * section 9), so they exclude other processes and other hosts. Each
 * dnfs_file is its own lock owner, like Linux open file description
 * locks: two dnfs_files of one process, even of the same path, conflict
 * with each other as two processes would. A range is `len` bytes at
 * `offset`; `len` 0 means from `offset` to the end of the file, however
 * far it grows. `exclusive` non-zero asks for a write (exclusive) lock,
 * 0 for a read (shared) one. Locking a range this file already holds
 * changes its type. Every lock is released by dnfs_close (the last
 * close of the file, before the file is closed on the server) and lost
 * if the client's lease expires (no contact with the server for the
 * lease time, 60 s by default).
 *
 * On an NFSv3 server (the default; NFSv4.1 is chosen by vers=4.1 in the
 * URL or nfs_version: nfsv4.1 in the configuration) these functions
 * fail with -ENOTSUP and change nothing: NFSv3 locking needs the separate
 * NLM protocol, which directnfs does not speak.
 * Negative offset or len, or a NULL file: -EINVAL.
 * --------------------------------------------------------------------- */

/* Locks the range, waiting while another owner holds a conflicting lock:
 * the server is asked again after 10 ms, then after twice as long each
 * time up to 1 s (RFC 8881 section 9.6; the blocking lock types ask the
 * server to keep the lock for this waiter when it is released). There is
 * no timeout: use dnfs_trylock to poll. Returns 0, or a negative errno. */
int dnfs_lock(dnfs_file *file, int64_t offset, int64_t len, int exclusive);

/* Like dnfs_lock without waiting: a conflicting lock held by another owner
 * gives -EAGAIN (NFS4ERR_DENIED). Returns 0, or a negative errno. */
int dnfs_trylock(dnfs_file *file, int64_t offset, int64_t len, int exclusive);

/* Releases this file's locks on the range (a part of a locked range may
 * be released, splitting it). Releasing a range not locked is not an
 * error. Returns 0, or a negative errno. */
int dnfs_unlock(dnfs_file *file, int64_t offset, int64_t len);

/* ---------------------------------------------------------------------
 * Attributes and names
 * --------------------------------------------------------------------- */

/* dnfs_stat.type */
#define DNFS_TYPE_FILE 1
#define DNFS_TYPE_DIR 2
#define DNFS_TYPE_SYMLINK 3
#define DNFS_TYPE_OTHER 4

/* File attributes, fresh from the server (directnfs caches no attributes).
 * `mode` is like st_mode: S_IFREG/S_IFDIR/S_IFLNK type bits (0 for OTHER)
 * ORed with the permission bits (07777). */
struct dnfs_stat {
    uint64_t size;       /* bytes */
    uint64_t used;       /* bytes of storage used */
    uint64_t fileid;     /* inode number */
    uint32_t mode;
    uint32_t type;       /* DNFS_TYPE_* */
    uint32_t uid;
    uint32_t gid;
    uint32_t nlink;
    uint32_t reserved;   /* 0 */
    int64_t atime_sec;   /* last access, seconds since the epoch */
    int64_t atime_nsec;
    int64_t mtime_sec;   /* last data change */
    int64_t mtime_nsec;
    int64_t ctime_sec;   /* last attribute change */
    int64_t ctime_nsec;
};

/* Attributes of an open file / of a path. 0 or negative errno; *st is
 * written only on success. */
int dnfs_fstat(dnfs_file *file, struct dnfs_stat *st);
int dnfs_stat(dnfs_client *client, const char *path, struct dnfs_stat *st);

/* Space and file slots of the client's export (NFSv3 FSSTAT; on NFSv4.1
 * a GETATTR of the space_* and files_* attributes), as `dnfs df` shows them. "avail" is what this user may still use (quotas, reserved
 * space); "free" is what the file system has left. */
struct dnfs_statfs {
    uint64_t total_bytes; /* size of the file system */
    uint64_t free_bytes;
    uint64_t avail_bytes;
    uint64_t total_files; /* file slots (inodes) */
    uint64_t free_files;
    uint64_t avail_files;
};

/* 0 or negative errno; *st is written only on success. */
int dnfs_statfs(dnfs_client *client, struct dnfs_statfs *st);

/* Removes a file (not a directory: -EISDIR or -EPERM, as the server says). */
int dnfs_unlink(dnfs_client *client, const char *path);

/* Renames `from` to `to` within the export, replacing `to` atomically on
 * the server if it exists. */
int dnfs_rename(dnfs_client *client, const char *from, const char *to);

/* Creates a directory with the permission bits of `mode` (0 means 0755;
 * no umask is applied). */
int dnfs_mkdir(dnfs_client *client, const char *path, unsigned mode);

/* Removes an empty directory (-ENOTEMPTY otherwise). */
int dnfs_rmdir(dnfs_client *client, const char *path);

/* One directory entry, as passed to a dnfs_readdir callback. Everything it
 * points to (name) belongs to the library and is valid ONLY during the
 * callback: copy what you keep. */
struct dnfs_dirent {
    const char *name;      /* never "." or ".." */
    uint64_t fileid;
    int has_stat;          /* 1 if st is filled (the server sent attributes) */
    struct dnfs_stat st;
};

/* Return 0 to continue, anything else to stop the listing. */
typedef int (*dnfs_readdir_cb)(void *ctx, const struct dnfs_dirent *entry);

/* Lists a directory, calling cb(ctx, entry) for each entry, in the
 * server's order, on the calling thread. The whole listing is read before
 * the first callback (so the callback may call back into the library).
 * Returns 0 when every entry was passed, the callback's value if it
 * returned non-zero (it is passed through unchanged, so use positive
 * values to tell it from an error), or a negative errno (no callback was
 * made). */
int dnfs_readdir(dnfs_client *client, const char *path, dnfs_readdir_cb cb, void *ctx);

/* ---------------------------------------------------------------------
 * Batches: many I/Os in flight, completions reaped in groups (the
 * aio_waitn model)
 *
 *   dnfs_batch *b = dnfs_batch_new(client);
 *   for (i = 0; i < 64; i++)
 *       dnfs_batch_read(b, f, bufs[i], 8192, i * 8192, i);   // token = i
 *   struct dnfs_completion done[64];
 *   int got = 0;
 *   while (got < 64) {
 *       int n = dnfs_batch_wait(b, 1, -1, done, 64);
 *       ... done[k].token, done[k].result (bytes or -errno) ...
 *       got += n;
 *   }
 *   dnfs_batch_free(b);
 *
 * BUFFERS: a read buffer must stay valid and untouched until its
 * completion has been returned by dnfs_batch_wait (or dnfs_batch_free has
 * returned): the server's data is written into it directly, from the
 * library's threads, at any time before that. A write buffer must stay
 * valid and unchanged until its completion as well (the current version
 * copies it at submission, but do not rely on it).
 * --------------------------------------------------------------------- */

struct dnfs_completion {
    uint64_t token;  /* as given at submission */
    int64_t result;  /* bytes transferred (a read: fewer than asked only at
                        end of file, as dnfs_pread), or a negative errno */
};

/* A new, empty batch for files of `client`. NULL and errno on failure. */
dnfs_batch *dnfs_batch_new(dnfs_client *client);

/* Submit one read / write of len bytes at offset; the call does not wait
 * for the server. Returns 0 once submitted, or a negative errno (nothing
 * was submitted then: -EINVAL for bad arguments, -EXDEV if the file
 * belongs to another client than the batch). Submitted I/Os are queued
 * and sent to the server together (one write per connection) when
 * dnfs_batch_wait is called or once 64 are queued, as io_uring sends its
 * submission queue on io_uring_enter: submit everything you have, then
 * wait. */
int dnfs_batch_read(dnfs_batch *batch, dnfs_file *file, void *buf, size_t len,
                    int64_t offset, uint64_t token);
int dnfs_batch_write(dnfs_batch *batch, dnfs_file *file, const void *buf, size_t len,
                     int64_t offset, uint64_t token);

/* Waits until at least min_nr I/Os have completed, or timeout_ms
 * milliseconds have passed (negative: no timeout; 0: just poll), then
 * stores up to max_out completions in out[] and returns how many (0 ..
 * max_out), or a negative errno. min_nr is clamped to max_out and to the
 * number outstanding, so waiting with nothing outstanding returns 0 at
 * once. Completions beyond max_out are kept for the next call. Each
 * operation completes exactly once. On NFSv4.1 an I/O whose reply needs a
 * pause, a re-send or a session recovery (NFS4ERR_DELAY, a lost session,
 * a server restart) is finished by a blocking request inside this call,
 * which timeout_ms does not bound (a soft mount's timeo/retrans do). */
int dnfs_batch_wait(dnfs_batch *batch, int min_nr, int timeout_ms,
                    struct dnfs_completion *out, int max_out);

/* I/Os submitted whose completion has not been returned yet. */
int dnfs_batch_outstanding(dnfs_batch *batch);

/* Waits for every outstanding I/O of the batch (their results are
 * discarded), then frees it. After it returns, no buffer of the batch is
 * used any more. Returns 0; NULL is ignored. */
int dnfs_batch_free(dnfs_batch *batch);

#ifdef __cplusplus
}
#endif

#endif /* DIRECTNFS_H */
