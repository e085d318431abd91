# shellcheck shell=bash
# The DNFS_KRB5=1 mode of nfs-server.sh: Ganesha with RPCSEC_GSS (Kerberos
# V5) against the realm that scripts/server/kdc.sh runs. Sourced after
# lib/ganesha.sh, never executed.
#
# Ganesha reads the realm from the KRB5_CONFIG and KRB5_KTNAME of its own
# environment (it never sees the machine's /etc/krb5.conf for this realm):
# launch sets both from the state, and the NFS_KRB5 block names the keytab.

# Reads the running realm's files from `kdc.sh env` into KRB5_CONF_FILE and
# KRB5_KEYTAB (saved in the server's state). Dies when the KDC is down.
krb5_find_realm() {
    local env_lines
    env_lines=$("$SCRIPT_DIR/kdc.sh" env) ||
        die "DNFS_KRB5=1 needs a running KDC: start it with scripts/server/kdc.sh start (same DNFS_KDC_STATE_DIR)"
    KRB5_CONF_FILE=$(sed -n 's/^KRB5_CONFIG=//p' <<<"$env_lines")
    KRB5_KEYTAB=$(sed -n 's/^DNFS_KRB5_SERVER_KEYTAB=//p' <<<"$env_lines")
    [[ -f $KRB5_CONF_FILE && -f $KRB5_KEYTAB ]] || die "kdc.sh env named no krb5.conf or server keytab"
}

# Sets what write_ganesha_conf and start_ganesha read: the export's flavours
# (Kerberos first, AUTH_SYS still allowed for the other tests' clients) and
# the NFS_KRB5 block; exports the realm to the Ganesha process. KRB5P_DIR,
# when given, is a second export that takes krb5p only.
#   krb5_ganesha_setup CCACHE_DIR [KRB5P_DIR]
krb5_ganesha_setup() {
    local ccache_dir=$1 krb5p_dir=${2:-}
    mkdir -p "$ccache_dir"
    # shellcheck disable=SC2034 # read by write_ganesha_conf (lib/ganesha.sh)
    GANESHA_SECTYPE="krb5, krb5i, krb5p, sys"
    # shellcheck disable=SC2034 # read by write_ganesha_conf (lib/ganesha.sh)
    GANESHA_SECOND_EXPORT=
    # shellcheck disable=SC2034
    [[ -n $krb5p_dir ]] && GANESHA_SECOND_EXPORT="$krb5p_dir krb5p"
    # shellcheck disable=SC2034 # read by write_ganesha_conf (lib/ganesha.sh)
    GANESHA_EXTRA_BLOCK=$(
        cat <<EOB
NFS_KRB5 {
    Active_krb5 = true;
    PrincipalName = "nfs";
    KeytabPath = "$KRB5_KEYTAB";
    CCacheDir = "$ccache_dir";
}
EOB
    )
    export KRB5_CONFIG=$KRB5_CONF_FILE KRB5_KTNAME=FILE:$KRB5_KEYTAB
}
