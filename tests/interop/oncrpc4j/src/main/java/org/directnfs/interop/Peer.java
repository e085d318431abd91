package org.directnfs.interop;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collection;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManagerFactory;

import org.dcache.oncrpc4j.rpc.OncRpcException;
import org.dcache.oncrpc4j.rpc.OncRpcProgram;
import org.dcache.oncrpc4j.rpc.OncRpcSvc;
import org.dcache.oncrpc4j.rpc.OncRpcSvcBuilder;
import org.dcache.oncrpc4j.rpc.RpcAuthError;
import org.dcache.oncrpc4j.rpc.RpcAuthStat;
import org.dcache.oncrpc4j.rpc.RpcAuthType;
import org.dcache.oncrpc4j.rpc.RpcCall;
import org.dcache.oncrpc4j.rpc.RpcDispatchable;
import org.dcache.oncrpc4j.rpc.RpcRejectStatus;
import org.dcache.oncrpc4j.xdr.XdrAble;
import org.dcache.oncrpc4j.xdr.XdrDecodingStream;
import org.dcache.oncrpc4j.xdr.XdrEncodingStream;

/**
 * An RPC-with-TLS (RFC 9289) peer for directnfs's interop test, made of oncrpc4j: the
 * project's own STARTTLS front (scripts/server/tls-front.py) is the only other TLS peer
 * the client is tested against, and it was written by the same people as the client.
 *
 * <p>Usage: {@code Peer DIR PORT [WATCH_PID]}. Serves on 127.0.0.1:PORT (STARTTLS, any
 * client) and 127.0.0.1:PORT+1 (STARTTLS, a client certificate signed by DIR/ca.pem
 * required: mtls), with DIR/server.pem and DIR/server.key (as tls-front.py makes them),
 * TLS 1.3 only. Each port answers MOUNT v3 (NULL, MNT, EXPORT) and NFSv3 (NULL, GETATTR,
 * FSINFO, PATHCONF) for one export, "/", whose root has fixed attributes (fileid 9289).
 * Every call but the AUTH_TLS probe must come in TLS: one in clear is refused with
 * AUTH_TOOWEAK, so a client that moved data through here used TLS. Each call is logged
 * on stdout ({@code call port=.. prog=.. vers=.. proc=.. flavor=.. tls=..}). With
 * WATCH_PID, the peer exits once that process is gone (a test binary that started it).
 */
public final class Peer {

    static final int MOUNT_PROGRAM = 100005;
    static final int NFS_PROGRAM = 100003;
    static final int V3 = 3;

    /** The root's handle (RFC 1813 nfs_fh3: opaque, at most 64 bytes). */
    static final byte[] ROOT = "oncrpc4j-peer-root".getBytes(StandardCharsets.US_ASCII);
    /** The root's fileid: a value the test checks came back through TLS. */
    static final long ROOT_FILEID = 9289;

    private static final int NFS3_OK = 0;
    private static final int NFS3ERR_STALE = 70;
    private static final int MNT3_OK = 0;
    private static final int MNT3ERR_NOENT = 2;
    private static final int AUTH_SYS = 1;

    private Peer() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: Peer DIR PORT [WATCH_PID]");
            System.exit(2);
        }
        Path dir = Path.of(args[0]);
        int port = Integer.parseInt(args[1]);
        OncRpcSvc tls = service(dir, port, false);
        OncRpcSvc mtls = service(dir, port + 1, true);
        tls.start();
        mtls.start();
        System.out.println("listening on 127.0.0.1:" + port + " (STARTTLS) and 127.0.0.1:"
                + (port + 1) + " (STARTTLS, client certificate required)");
        System.out.flush();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                tls.stop();
                mtls.stop();
            } catch (IOException e) {
                // exiting anyway
            }
        }));
        if (args.length > 2) {
            long watched = Long.parseLong(args[2]);
            while (ProcessHandle.of(watched).map(ProcessHandle::isAlive).orElse(false)) {
                Thread.sleep(500);
            }
            System.out.println("process " + watched + " is gone: exiting");
            System.exit(0);
        }
        Thread.currentThread().join();
    }

    private static OncRpcSvc service(Path dir, int port, boolean mtls) throws Exception {
        SSLParameters params = new SSLParameters();
        params.setProtocols(new String[] {"TLSv1.3"});
        params.setCipherSuites(new String[] {
            "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"});
        params.setNeedClientAuth(mtls);
        Handler handler = new Handler(port);
        return new OncRpcSvcBuilder()
                .withTCP()
                .withoutAutoPublish()
                .withBindAddress("127.0.0.1")
                .withPort(port)
                .withServiceName("oncrpc4j-peer-" + port)
                .withSSLContext(sslContext(dir))
                .withSSLParameters(params)
                .withStartTLS()
                .withRpcService(new OncRpcProgram(MOUNT_PROGRAM, V3), handler)
                .withRpcService(new OncRpcProgram(NFS_PROGRAM, V3), handler)
                .build();
    }

    /** The server's certificate and key, and ca.pem as the only CA for client certificates. */
    private static SSLContext sslContext(Path dir) throws Exception {
        CertificateFactory x509 = CertificateFactory.getInstance("X.509");
        Collection<? extends Certificate> chain;
        try (var in = Files.newInputStream(dir.resolve("server.pem"))) {
            chain = x509.generateCertificates(in);
        }
        KeyStore keys = KeyStore.getInstance("PKCS12");
        keys.load(null, null);
        char[] none = new char[0];
        keys.setKeyEntry("server", privateKey(dir.resolve("server.key")), none,
                chain.toArray(new Certificate[0]));
        KeyManagerFactory kmf =
                KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, none);

        KeyStore trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        try (var in = Files.newInputStream(dir.resolve("ca.pem"))) {
            trust.setCertificateEntry("ca", x509.generateCertificate(in));
        }
        TrustManagerFactory tmf =
                TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);

        SSLContext ctx = SSLContext.getInstance("TLSv1.3");
        ctx.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
        return ctx;
    }

    /** An unencrypted PKCS#8 PEM key (openssl 3's `req -nodes`), EC or RSA. */
    private static PrivateKey privateKey(Path pem) throws Exception {
        String text = Files.readString(pem);
        String b64 = text.replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", "");
        PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(Base64.getDecoder().decode(b64));
        try {
            return KeyFactory.getInstance("EC").generatePrivate(spec);
        } catch (java.security.spec.InvalidKeySpecException e) {
            return KeyFactory.getInstance("RSA").generatePrivate(spec);
        }
    }

    /** MOUNT v3 and NFSv3, just enough for a mount and a few calls. */
    private static final class Handler implements RpcDispatchable {
        private final int port;

        Handler(int port) {
            this.port = port;
        }

        @Override
        public void dispatchOncRpcCall(RpcCall call) throws OncRpcException, IOException {
            int flavor = call.getCredential().type();
            boolean tls = call.getTransport().isTLS();
            System.out.println("call port=" + port + " prog=" + call.getProgram() + " vers="
                    + call.getProgramVersion() + " proc=" + call.getProcedure() + " flavor="
                    + flavor + " tls=" + tls);
            System.out.flush();
            if (flavor == RpcAuthType.TLS) {
                // The AUTH_TLS probe (RFC 9289 section 4.1): a NULL call. oncrpc4j set the
                // STARTTLS verifier and starts TLS once this reply is written.
                if (call.getProcedure() != 0) {
                    call.reject(RpcRejectStatus.AUTH_ERROR,
                            new RpcAuthError(RpcAuthStat.AUTH_BADCRED));
                    return;
                }
                call.reply(reply(x -> {}));
                return;
            }
            if (!tls) {
                // TLS is required here: a call in clear is refused.
                call.reject(RpcRejectStatus.AUTH_ERROR, new RpcAuthError(RpcAuthStat.AUTH_TOOWEAK));
                return;
            }
            if (call.getProgram() == MOUNT_PROGRAM) {
                mount(call);
            } else {
                nfs(call);
            }
        }

        private void mount(RpcCall call) throws OncRpcException, IOException {
            switch (call.getProcedure()) {
                case 0 -> call.reply(reply(x -> {}));
                case 1 -> { // MNT (RFC 1813 section 5.2.1)
                    Args a = new Args(XdrDecodingStream::xdrDecodeString);
                    call.retrieveCall(a);
                    if (!"/".equals(a.value)) {
                        call.reply(reply(x -> x.xdrEncodeInt(MNT3ERR_NOENT)));
                        return;
                    }
                    call.reply(reply(x -> {
                        x.xdrEncodeInt(MNT3_OK);
                        x.xdrEncodeDynamicOpaque(ROOT);
                        x.xdrEncodeInt(1);
                        x.xdrEncodeInt(AUTH_SYS);
                    }));
                }
                case 3 -> call.reply(reply(x -> {})); // UMNT
                case 5 -> call.reply(reply(x -> { // EXPORT: "/" to everyone
                    x.xdrEncodeBoolean(true);
                    x.xdrEncodeString("/");
                    x.xdrEncodeBoolean(false);
                    x.xdrEncodeBoolean(false);
                }));
                default -> call.failProcedureUnavailable();
            }
        }

        private void nfs(RpcCall call) throws OncRpcException, IOException {
            int proc = call.getProcedure();
            if (proc == 0) {
                call.reply(reply(x -> {}));
                return;
            }
            if (proc != 1 && proc != 19 && proc != 20) {
                call.failProcedureUnavailable();
                return;
            }
            Args a = new Args(XdrDecodingStream::xdrDecodeDynamicOpaque);
            call.retrieveCall(a);
            if (!Arrays.equals((byte[]) a.value, ROOT)) {
                // GETATTR3resfail is empty; FSINFO's and PATHCONF's carry post_op_attr.
                call.reply(reply(x -> {
                    x.xdrEncodeInt(NFS3ERR_STALE);
                    if (proc != 1) {
                        x.xdrEncodeBoolean(false);
                    }
                }));
                return;
            }
            switch (proc) {
                case 1 -> call.reply(reply(x -> { // GETATTR
                    x.xdrEncodeInt(NFS3_OK);
                    rootAttributes(x);
                }));
                case 19 -> call.reply(reply(x -> { // FSINFO
                    x.xdrEncodeInt(NFS3_OK);
                    x.xdrEncodeBoolean(true);
                    rootAttributes(x);
                    for (int v : new int[] {65536, 65536, 4096, 65536, 65536, 4096, 65536}) {
                        x.xdrEncodeInt(v); // rtmax rtpref rtmult wtmax wtpref wtmult dtpref
                    }
                    x.xdrEncodeLong(1L << 40); // maxfilesize
                    x.xdrEncodeInt(0); // time_delta: 1 ns
                    x.xdrEncodeInt(1);
                    x.xdrEncodeInt(0x1b); // LINK SYMLINK HOMOGENEOUS CANSETTIME
                }));
                default -> call.reply(reply(x -> { // PATHCONF
                    x.xdrEncodeInt(NFS3_OK);
                    x.xdrEncodeBoolean(true);
                    rootAttributes(x);
                    x.xdrEncodeInt(32000); // linkmax
                    x.xdrEncodeInt(255); // name_max
                    x.xdrEncodeBoolean(true); // no_trunc
                    x.xdrEncodeBoolean(true); // chown_restricted
                    x.xdrEncodeBoolean(false); // case_insensitive
                    x.xdrEncodeBoolean(true); // case_preserving
                }));
            }
        }
    }

    /** fattr3 of the root (RFC 1813 section 2.6): a directory, mode 0755, fileid 9289. */
    static void rootAttributes(XdrEncodingStream x) {
        x.xdrEncodeInt(2); // NF3DIR
        x.xdrEncodeInt(0755);
        x.xdrEncodeInt(2); // nlink
        x.xdrEncodeInt(0); // uid
        x.xdrEncodeInt(0); // gid
        x.xdrEncodeLong(4096); // size
        x.xdrEncodeLong(4096); // used
        x.xdrEncodeInt(0); // rdev
        x.xdrEncodeInt(0);
        x.xdrEncodeLong(9289); // fsid
        x.xdrEncodeLong(ROOT_FILEID);
        for (int i = 0; i < 3; i++) { // atime mtime ctime: 2026-01-01
            x.xdrEncodeInt(1767225600);
            x.xdrEncodeInt(0);
        }
    }

    private interface Decoder {
        Object decode(XdrDecodingStream x) throws OncRpcException, IOException;
    }

    private interface Encoder {
        void encode(XdrEncodingStream x) throws OncRpcException, IOException;
    }

    /** Arguments made of one value. */
    private static final class Args implements XdrAble {
        private final Decoder decoder;
        Object value;

        Args(Decoder decoder) {
            this.decoder = decoder;
        }

        @Override
        public void xdrDecode(XdrDecodingStream x) throws OncRpcException, IOException {
            value = decoder.decode(x);
        }

        @Override
        public void xdrEncode(XdrEncodingStream x) {
            throw new UnsupportedOperationException("arguments are only decoded");
        }
    }

    private static XdrAble reply(Encoder encoder) {
        return new XdrAble() {
            @Override
            public void xdrDecode(XdrDecodingStream x) {
                throw new UnsupportedOperationException("replies are only encoded");
            }

            @Override
            public void xdrEncode(XdrEncodingStream x) throws OncRpcException, IOException {
                encoder.encode(x);
            }
        };
    }
}
