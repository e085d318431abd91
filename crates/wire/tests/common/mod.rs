//! Proptest strategies for every wire type, shared by the integration
//! tests. Each strategy produces only values whose encoding decodes back
//! to the same value (bounded names, `Fail` arms with a non-OK status,
//! `count` equal to the data length).
#![allow(dead_code)]

use directnfs_wire::mount::{
    dirpath, exportnode, exports, mntname, mountres3, mountres3_ok, mountstat3,
};
use directnfs_wire::nfs3::*;
use directnfs_wire::portmap::Mapping;
use proptest::collection::vec;
use proptest::prelude::*;

pub fn fh() -> impl Strategy<Value = nfs_fh3> {
    vec(any::<u8>(), 0..=NFS3_FHSIZE).prop_map(|b| nfs_fh3::new(&b).unwrap())
}

pub fn filename() -> impl Strategy<Value = filename3> {
    prop_oneof![
        4 => vec(any::<u8>(), 0..24),
        1 => vec(any::<u8>(), 0..=MAX_NAME_LEN),
    ]
    .prop_map(filename3)
}

pub fn nfspath() -> impl Strategy<Value = nfspath3> {
    prop_oneof![
        4 => vec(any::<u8>(), 0..40),
        1 => vec(any::<u8>(), 0..=MAX_PATH_LEN),
    ]
    .prop_map(nfspath3)
}

pub fn mount_dirpath() -> impl Strategy<Value = dirpath> {
    prop_oneof![
        4 => vec(any::<u8>(), 0..40),
        1 => vec(any::<u8>(), 0..=dirpath::MAX),
    ]
    .prop_map(dirpath)
}

pub fn mount_name() -> impl Strategy<Value = mntname> {
    vec(any::<u8>(), 0..=40).prop_map(mntname)
}

/// Any status but NFS3_OK: the named ones and arbitrary unknown values.
pub fn fail_status() -> impl Strategy<Value = nfsstat3> {
    prop_oneof![
        prop::sample::select(vec![
            nfsstat3::NFS3ERR_PERM,
            nfsstat3::NFS3ERR_NOENT,
            nfsstat3::NFS3ERR_IO,
            nfsstat3::NFS3ERR_ACCES,
            nfsstat3::NFS3ERR_EXIST,
            nfsstat3::NFS3ERR_STALE,
            nfsstat3::NFS3ERR_JUKEBOX,
            nfsstat3::NFS3ERR_SERVERFAULT,
        ]),
        (1u32..).prop_map(nfsstat3),
    ]
}

pub fn res<O: std::fmt::Debug + Clone, F: std::fmt::Debug + Clone>(
    ok: impl Strategy<Value = O>,
    fail: impl Strategy<Value = F>,
) -> impl Strategy<Value = Nfs3Res<O, F>> {
    prop_oneof![
        ok.prop_map(Nfs3Res::Ok),
        (fail_status(), fail).prop_map(|(s, f)| Nfs3Res::Fail(s, f)),
    ]
}

pub fn time() -> impl Strategy<Value = nfstime3> {
    (any::<u32>(), any::<u32>()).prop_map(|(seconds, nseconds)| nfstime3 { seconds, nseconds })
}

pub fn fattr() -> impl Strategy<Value = fattr3> {
    (
        (
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
        ),
        (
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
            any::<u64>(),
        ),
        (time(), time(), time()),
    )
        .prop_map(
            |(
                (t, mode, nlink, uid, gid),
                (size, used, s1, s2, fsid, fileid),
                (atime, mtime, ctime),
            )| {
                fattr3 {
                    type_: ftype3(t),
                    mode,
                    nlink,
                    uid,
                    gid,
                    size,
                    used,
                    rdev: specdata3 {
                        specdata1: s1,
                        specdata2: s2,
                    },
                    fsid,
                    fileid,
                    atime,
                    mtime,
                    ctime,
                }
            },
        )
}

pub fn post_op() -> impl Strategy<Value = post_op_attr> {
    proptest::option::of(fattr())
}

pub fn wcc() -> impl Strategy<Value = wcc_data> {
    (
        proptest::option::of(
            (any::<u64>(), time(), time()).prop_map(|(size, mtime, ctime)| wcc_attr {
                size,
                mtime,
                ctime,
            }),
        ),
        post_op(),
    )
        .prop_map(|(before, after)| wcc_data { before, after })
}

pub fn set_time() -> impl Strategy<Value = SetTime> {
    prop_oneof![
        Just(SetTime::DontChange),
        Just(SetTime::SetToServerTime),
        time().prop_map(SetTime::SetToClientTime),
    ]
}

pub fn sattr() -> impl Strategy<Value = sattr3> {
    (
        any::<Option<u32>>(),
        any::<Option<u32>>(),
        any::<Option<u32>>(),
        any::<Option<u64>>(),
        set_time(),
        set_time(),
    )
        .prop_map(|(mode, uid, gid, size, atime, mtime)| sattr3 {
            mode,
            uid,
            gid,
            size,
            atime,
            mtime,
        })
}

pub fn verf8() -> impl Strategy<Value = [u8; 8]> {
    any::<[u8; 8]>()
}

pub fn stable() -> impl Strategy<Value = stable_how> {
    any::<u32>().prop_map(stable_how)
}

pub fn dirop() -> impl Strategy<Value = diropargs3> {
    (fh(), filename()).prop_map(|(dir, name)| diropargs3 { dir, name })
}

pub fn data() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..300)
}

// ---- args ----

pub fn getattr_args() -> impl Strategy<Value = GETATTR3args> {
    fh().prop_map(|object| GETATTR3args { object })
}
pub fn setattr_args() -> impl Strategy<Value = SETATTR3args> {
    (fh(), sattr(), proptest::option::of(time())).prop_map(|(object, new_attributes, guard)| {
        SETATTR3args {
            object,
            new_attributes,
            guard,
        }
    })
}
pub fn lookup_args() -> impl Strategy<Value = LOOKUP3args> {
    dirop().prop_map(|what| LOOKUP3args { what })
}
pub fn access_args() -> impl Strategy<Value = ACCESS3args> {
    (fh(), any::<u32>()).prop_map(|(object, access)| ACCESS3args { object, access })
}
pub fn read_args() -> impl Strategy<Value = READ3args> {
    (fh(), any::<u64>(), any::<u32>()).prop_map(|(file, offset, count)| READ3args {
        file,
        offset,
        count,
    })
}
pub fn write_args() -> impl Strategy<Value = WRITE3args> {
    (fh(), any::<u64>(), stable(), data()).prop_map(|(file, offset, stable, data)| WRITE3args {
        file,
        offset,
        count: data.len() as u32,
        stable,
        data,
    })
}
pub fn createhow() -> impl Strategy<Value = createhow3> {
    prop_oneof![
        sattr().prop_map(createhow3::Unchecked),
        sattr().prop_map(createhow3::Guarded),
        verf8().prop_map(|v| createhow3::Exclusive(createverf3(v))),
    ]
}
pub fn create_args() -> impl Strategy<Value = CREATE3args> {
    (dirop(), createhow()).prop_map(|(where_, how)| CREATE3args { where_, how })
}
pub fn mkdir_args() -> impl Strategy<Value = MKDIR3args> {
    (dirop(), sattr()).prop_map(|(where_, attributes)| MKDIR3args { where_, attributes })
}
pub fn readlink_args() -> impl Strategy<Value = READLINK3args> {
    fh().prop_map(|symlink| READLINK3args { symlink })
}
pub fn symlink_args() -> impl Strategy<Value = SYMLINK3args> {
    (dirop(), sattr(), nfspath()).prop_map(|(where_, symlink_attributes, symlink_data)| {
        SYMLINK3args {
            where_,
            symlink: symlinkdata3 {
                symlink_attributes,
                symlink_data,
            },
        }
    })
}
pub fn link_args() -> impl Strategy<Value = LINK3args> {
    (fh(), dirop()).prop_map(|(file, link)| LINK3args { file, link })
}
pub fn remove_args() -> impl Strategy<Value = REMOVE3args> {
    dirop().prop_map(|object| REMOVE3args { object })
}
pub fn rmdir_args() -> impl Strategy<Value = RMDIR3args> {
    dirop().prop_map(|object| RMDIR3args { object })
}
pub fn rename_args() -> impl Strategy<Value = RENAME3args> {
    (dirop(), dirop()).prop_map(|(from, to)| RENAME3args { from, to })
}
pub fn readdir_args() -> impl Strategy<Value = READDIR3args> {
    (fh(), any::<u64>(), verf8(), any::<u32>()).prop_map(|(dir, cookie, v, count)| READDIR3args {
        dir,
        cookie,
        cookieverf: cookieverf3(v),
        count,
    })
}
pub fn readdirplus_args() -> impl Strategy<Value = READDIRPLUS3args> {
    (fh(), any::<u64>(), verf8(), any::<u32>(), any::<u32>()).prop_map(
        |(dir, cookie, v, dircount, maxcount)| READDIRPLUS3args {
            dir,
            cookie,
            cookieverf: cookieverf3(v),
            dircount,
            maxcount,
        },
    )
}
pub fn fsstat_args() -> impl Strategy<Value = FSSTAT3args> {
    fh().prop_map(|fsroot| FSSTAT3args { fsroot })
}
pub fn fsinfo_args() -> impl Strategy<Value = FSINFO3args> {
    fh().prop_map(|fsroot| FSINFO3args { fsroot })
}
pub fn pathconf_args() -> impl Strategy<Value = PATHCONF3args> {
    fh().prop_map(|object| PATHCONF3args { object })
}
pub fn commit_args() -> impl Strategy<Value = COMMIT3args> {
    (fh(), any::<u64>(), any::<u32>()).prop_map(|(file, offset, count)| COMMIT3args {
        file,
        offset,
        count,
    })
}
pub fn mapping() -> impl Strategy<Value = Mapping> {
    any::<(u32, u32, u32, u32)>().prop_map(|(prog, vers, prot, port)| Mapping {
        prog,
        vers,
        prot,
        port,
    })
}

// ---- results ----

pub fn getattr_res() -> impl Strategy<Value = GETATTR3res> {
    res(
        fattr().prop_map(|obj_attributes| GETATTR3resok { obj_attributes }),
        Just(()),
    )
}
pub fn setattr_res() -> impl Strategy<Value = SETATTR3res> {
    res(
        wcc().prop_map(|obj_wcc| SETATTR3resok { obj_wcc }),
        wcc().prop_map(|obj_wcc| SETATTR3resfail { obj_wcc }),
    )
}
pub fn lookup_res() -> impl Strategy<Value = LOOKUP3res> {
    res(
        (fh(), post_op(), post_op()).prop_map(|(object, obj_attributes, dir_attributes)| {
            LOOKUP3resok {
                object,
                obj_attributes,
                dir_attributes,
            }
        }),
        post_op().prop_map(|dir_attributes| LOOKUP3resfail { dir_attributes }),
    )
}
pub fn access_res() -> impl Strategy<Value = ACCESS3res> {
    res(
        (post_op(), any::<u32>()).prop_map(|(obj_attributes, access)| ACCESS3resok {
            obj_attributes,
            access,
        }),
        post_op().prop_map(|obj_attributes| ACCESS3resfail { obj_attributes }),
    )
}
pub fn read_res() -> impl Strategy<Value = READ3res> {
    res(
        (post_op(), any::<bool>(), data()).prop_map(|(file_attributes, eof, data)| READ3resok {
            file_attributes,
            count: data.len() as u32,
            eof,
            data,
        }),
        post_op().prop_map(|file_attributes| READ3resfail { file_attributes }),
    )
}
pub fn write_res() -> impl Strategy<Value = WRITE3res> {
    res(
        (wcc(), any::<u32>(), stable(), verf8()).prop_map(|(file_wcc, count, committed, v)| {
            WRITE3resok {
                file_wcc,
                count,
                committed,
                verf: writeverf3(v),
            }
        }),
        wcc().prop_map(|file_wcc| WRITE3resfail { file_wcc }),
    )
}
fn new_obj() -> impl Strategy<Value = (post_op_fh3, post_op_attr, wcc_data)> {
    (proptest::option::of(fh()), post_op(), wcc())
}
pub fn create_res() -> impl Strategy<Value = CREATE3res> {
    res(
        new_obj().prop_map(|(obj, obj_attributes, dir_wcc)| CREATE3resok {
            obj,
            obj_attributes,
            dir_wcc,
        }),
        wcc().prop_map(|dir_wcc| CREATE3resfail { dir_wcc }),
    )
}
pub fn mkdir_res() -> impl Strategy<Value = MKDIR3res> {
    res(
        new_obj().prop_map(|(obj, obj_attributes, dir_wcc)| MKDIR3resok {
            obj,
            obj_attributes,
            dir_wcc,
        }),
        wcc().prop_map(|dir_wcc| MKDIR3resfail { dir_wcc }),
    )
}
pub fn readlink_res() -> impl Strategy<Value = READLINK3res> {
    res(
        (post_op(), nfspath()).prop_map(|(symlink_attributes, data)| READLINK3resok {
            symlink_attributes,
            data,
        }),
        post_op().prop_map(|symlink_attributes| READLINK3resfail { symlink_attributes }),
    )
}
pub fn symlink_res() -> impl Strategy<Value = SYMLINK3res> {
    res(
        new_obj().prop_map(|(obj, obj_attributes, dir_wcc)| SYMLINK3resok {
            obj,
            obj_attributes,
            dir_wcc,
        }),
        wcc().prop_map(|dir_wcc| SYMLINK3resfail { dir_wcc }),
    )
}
pub fn link_res() -> impl Strategy<Value = LINK3res> {
    res(
        (post_op(), wcc()).prop_map(|(file_attributes, linkdir_wcc)| LINK3resok {
            file_attributes,
            linkdir_wcc,
        }),
        (post_op(), wcc()).prop_map(|(file_attributes, linkdir_wcc)| LINK3resfail {
            file_attributes,
            linkdir_wcc,
        }),
    )
}
pub fn remove_res() -> impl Strategy<Value = REMOVE3res> {
    res(
        wcc().prop_map(|dir_wcc| REMOVE3resok { dir_wcc }),
        wcc().prop_map(|dir_wcc| REMOVE3resfail { dir_wcc }),
    )
}
pub fn rmdir_res() -> impl Strategy<Value = RMDIR3res> {
    res(
        wcc().prop_map(|dir_wcc| RMDIR3resok { dir_wcc }),
        wcc().prop_map(|dir_wcc| RMDIR3resfail { dir_wcc }),
    )
}
pub fn rename_res() -> impl Strategy<Value = RENAME3res> {
    res(
        (wcc(), wcc()).prop_map(|(fromdir_wcc, todir_wcc)| RENAME3resok {
            fromdir_wcc,
            todir_wcc,
        }),
        (wcc(), wcc()).prop_map(|(fromdir_wcc, todir_wcc)| RENAME3resfail {
            fromdir_wcc,
            todir_wcc,
        }),
    )
}
pub fn readdir_res() -> impl Strategy<Value = READDIR3res> {
    let entry =
        (any::<u64>(), filename(), any::<u64>()).prop_map(|(fileid, name, cookie)| entry3 {
            fileid,
            name,
            cookie,
        });
    res(
        (post_op(), verf8(), vec(entry, 0..12), any::<bool>()).prop_map(
            |(dir_attributes, v, entries, eof)| READDIR3resok {
                dir_attributes,
                cookieverf: cookieverf3(v),
                reply: dirlist3 { entries, eof },
            },
        ),
        post_op().prop_map(|dir_attributes| READDIR3resfail { dir_attributes }),
    )
}
pub fn readdirplus_res() -> impl Strategy<Value = READDIRPLUS3res> {
    let entry = (
        any::<u64>(),
        filename(),
        any::<u64>(),
        post_op(),
        proptest::option::of(fh()),
    )
        .prop_map(
            |(fileid, name, cookie, name_attributes, name_handle)| entryplus3 {
                fileid,
                name,
                cookie,
                name_attributes,
                name_handle,
            },
        );
    res(
        (post_op(), verf8(), vec(entry, 0..8), any::<bool>()).prop_map(
            |(dir_attributes, v, entries, eof)| READDIRPLUS3resok {
                dir_attributes,
                cookieverf: cookieverf3(v),
                reply: dirlistplus3 { entries, eof },
            },
        ),
        post_op().prop_map(|dir_attributes| READDIRPLUS3resfail { dir_attributes }),
    )
}
pub fn fsstat_res() -> impl Strategy<Value = FSSTAT3res> {
    res(
        (post_op(), any::<[u64; 6]>(), any::<u32>()).prop_map(|(obj_attributes, s, invarsec)| {
            FSSTAT3resok {
                obj_attributes,
                tbytes: s[0],
                fbytes: s[1],
                abytes: s[2],
                tfiles: s[3],
                ffiles: s[4],
                afiles: s[5],
                invarsec,
            }
        }),
        post_op().prop_map(|obj_attributes| FSSTAT3resfail { obj_attributes }),
    )
}
pub fn fsinfo_res() -> impl Strategy<Value = FSINFO3res> {
    res(
        (post_op(), any::<[u32; 8]>(), any::<u64>(), time()).prop_map(
            |(obj_attributes, u, maxfilesize, time_delta)| FSINFO3resok {
                obj_attributes,
                rtmax: u[0],
                rtpref: u[1],
                rtmult: u[2],
                wtmax: u[3],
                wtpref: u[4],
                wtmult: u[5],
                dtpref: u[6],
                maxfilesize,
                time_delta,
                properties: u[7],
            },
        ),
        post_op().prop_map(|obj_attributes| FSINFO3resfail { obj_attributes }),
    )
}
pub fn pathconf_res() -> impl Strategy<Value = PATHCONF3res> {
    res(
        (post_op(), any::<u32>(), any::<u32>(), any::<[bool; 4]>()).prop_map(
            |(obj_attributes, linkmax, name_max, b)| PATHCONF3resok {
                obj_attributes,
                linkmax,
                name_max,
                no_trunc: b[0],
                chown_restricted: b[1],
                case_insensitive: b[2],
                case_preserving: b[3],
            },
        ),
        post_op().prop_map(|obj_attributes| PATHCONF3resfail { obj_attributes }),
    )
}
pub fn commit_res() -> impl Strategy<Value = COMMIT3res> {
    res(
        (wcc(), verf8()).prop_map(|(file_wcc, v)| COMMIT3resok {
            file_wcc,
            verf: writeverf3(v),
        }),
        wcc().prop_map(|file_wcc| COMMIT3resfail { file_wcc }),
    )
}
pub fn mnt_res() -> impl Strategy<Value = mountres3> {
    prop_oneof![
        (fh(), vec(any::<i32>(), 0..8)).prop_map(|(fhandle, auth_flavors)| {
            mountres3::Ok(mountres3_ok {
                fhandle,
                auth_flavors,
            })
        }),
        (1u32..).prop_map(|s| mountres3::Err(mountstat3(s))),
    ]
}
pub fn export_res() -> impl Strategy<Value = exports> {
    let node = (mount_dirpath(), vec(mount_name(), 0..5))
        .prop_map(|(ex_dir, ex_groups)| exportnode { ex_dir, ex_groups });
    vec(node, 0..6).prop_map(exports)
}
