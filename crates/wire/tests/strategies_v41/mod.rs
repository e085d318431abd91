//! Proptest strategies for the NFSv4.1 types, shared by the v4.1
//! property tests. Each produces only values whose encoding decodes back
//! to the same value: bounded strings and arrays, `Fail` arms with a
//! non-OK status, COMPOUND results that stop at their first failure with
//! the COMPOUND status equal to the last result's, `NotDecoded` callback
//! operations only last.
#![allow(dead_code)]

use directnfs_wire::nfs3::MAX_PATH_LEN;
use directnfs_wire::nfs4::*;
use directnfs_wire::rpc::AuthSys;
use proptest::collection::vec;
use proptest::prelude::*;

// ---- basic types ----

pub fn fh() -> impl Strategy<Value = nfs_fh4> {
    vec(any::<u8>(), 0..=NFS4_FHSIZE).prop_map(|b| nfs_fh4::new(&b).unwrap())
}
pub fn stateid() -> impl Strategy<Value = stateid4> {
    (any::<u32>(), any::<[u8; 12]>()).prop_map(|(seqid, other)| stateid4 { seqid, other })
}
pub fn sessionid() -> impl Strategy<Value = sessionid4> {
    any::<[u8; 16]>().prop_map(sessionid4)
}
pub fn verifier() -> impl Strategy<Value = verifier4> {
    any::<[u8; 8]>().prop_map(verifier4)
}
pub fn bitmap() -> impl Strategy<Value = bitmap4> {
    vec(any::<u32>(), 0..=MAX_BITMAP_WORDS).prop_map(|w| bitmap4::from_words(&w).unwrap())
}
pub fn component() -> impl Strategy<Value = component4> {
    prop_oneof![
        4 => vec(any::<u8>(), 0..24),
        1 => vec(any::<u8>(), 0..=MAX_COMPONENT_LEN),
    ]
    .prop_map(component4)
}
pub fn utf8() -> impl Strategy<Value = utf8string> {
    prop_oneof![
        4 => vec(any::<u8>(), 0..24),
        1 => vec(any::<u8>(), 0..=NFS4_OPAQUE_LIMIT),
    ]
    .prop_map(utf8string)
}
pub fn linktext() -> impl Strategy<Value = linktext4> {
    prop_oneof![
        4 => vec(any::<u8>(), 0..24),
        1 => vec(any::<u8>(), 0..=MAX_PATH_LEN),
    ]
    .prop_map(linktext4)
}
pub fn owner_id() -> impl Strategy<Value = owner_id4> {
    vec(any::<u8>(), 0..40).prop_map(owner_id4)
}
pub fn time() -> impl Strategy<Value = nfstime4> {
    (any::<i64>(), any::<u32>()).prop_map(|(seconds, nseconds)| nfstime4 { seconds, nseconds })
}
pub fn settime() -> impl Strategy<Value = settime4> {
    prop_oneof![
        time().prop_map(settime4::ClientTime),
        any::<u32>()
            .prop_filter("not SET_TO_CLIENT_TIME4", |h| *h != 1)
            .prop_map(|h| settime4::ServerTime(time_how4(h))),
    ]
}
pub fn change_info() -> impl Strategy<Value = change_info4> {
    (any::<bool>(), any::<u64>(), any::<u64>()).prop_map(|(atomic, before, after)| change_info4 {
        atomic,
        before,
        after,
    })
}
pub fn state_owner() -> impl Strategy<Value = state_owner4> {
    (any::<u64>(), owner_id()).prop_map(|(clientid, owner)| state_owner4 { clientid, owner })
}
pub fn impl_id() -> impl Strategy<Value = nfs_impl_id4> {
    (utf8(), utf8(), time()).prop_map(|(nii_domain, nii_name, nii_date)| nfs_impl_id4 {
        nii_domain,
        nii_name,
        nii_date,
    })
}
pub fn ace() -> impl Strategy<Value = nfsace4> {
    (any::<u32>(), any::<u32>(), any::<u32>(), utf8()).prop_map(
        |(type_, flag, access_mask, who)| nfsace4 {
            type_,
            flag,
            access_mask,
            who,
        },
    )
}
pub fn data() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..300)
}

/// Any status but NFS4_OK: named ones and arbitrary unknown values.
pub fn fail_status() -> impl Strategy<Value = nfsstat4> {
    prop_oneof![
        prop::sample::select(vec![
            nfsstat4::NFS4ERR_NOENT,
            nfsstat4::NFS4ERR_BADSESSION,
            nfsstat4::NFS4ERR_DELAY,
            nfsstat4::NFS4ERR_SEQ_MISORDERED,
            nfsstat4::NFS4ERR_STALE,
            nfsstat4::NFS4ERR_GRACE,
        ]),
        (1u32..).prop_map(nfsstat4),
    ]
}
pub fn res<T: std::fmt::Debug + Clone>(
    ok: impl Strategy<Value = T>,
) -> impl Strategy<Value = Nfs4Res<T>> {
    prop_oneof![
        ok.prop_map(Nfs4Res::Ok),
        fail_status().prop_map(Nfs4Res::Fail)
    ]
}
pub fn any_status() -> impl Strategy<Value = nfsstat4> {
    prop_oneof![Just(nfsstat4::NFS4_OK), fail_status()]
}

/// `v` if bit `i` of `mask` is set.
fn pick<T>(mask: u64, i: u32, v: T) -> Option<T> {
    (mask & (1 << i) != 0).then_some(v)
}

/// An `fattr4` with any subset of the attributes this crate decodes.
pub fn fattr() -> impl Strategy<Value = fattr4> {
    (
        any::<u64>(),
        any::<[u64; 4]>(),
        (proptest::option::of(utf8()), proptest::option::of(utf8())),
        (fh(), bitmap(), bitmap()),
        (time(), time(), settime(), settime()),
    )
        .prop_map(
            |(mask, n, (owner, owner_group), (fh, b1, b2), (t1, t2, s1, s2))| {
                let on = |i: u32| mask & (1 << i) != 0;
                fattr4 {
                    supported_attrs: pick(mask, 0, b1),
                    type_: pick(mask, 1, nfs_ftype4(n[0] as u32 % 12)),
                    fh_expire_type: pick(mask, 2, n[1] as u32),
                    change: pick(mask, 3, n[2]),
                    size: pick(mask, 4, n[3]),
                    link_support: pick(mask, 5, on(40)),
                    symlink_support: pick(mask, 6, on(41)),
                    named_attr: pick(mask, 7, on(42)),
                    fsid: pick(
                        mask,
                        8,
                        fsid4 {
                            major: n[0],
                            minor: n[1],
                        },
                    ),
                    unique_handles: pick(mask, 9, on(43)),
                    lease_time: pick(mask, 10, n[2] as u32),
                    rdattr_error: pick(mask, 11, nfsstat4(n[3] as u32)),
                    aclsupport: pick(mask, 12, (n[0] >> 32) as u32),
                    cansettime: pick(mask, 13, on(44)),
                    case_insensitive: pick(mask, 14, on(45)),
                    case_preserving: pick(mask, 15, on(46)),
                    chown_restricted: pick(mask, 16, on(47)),
                    filehandle: pick(mask, 17, fh),
                    fileid: pick(mask, 18, n[1]),
                    files_avail: pick(mask, 19, n[2]),
                    files_free: pick(mask, 20, n[3]),
                    files_total: pick(mask, 21, n[0]),
                    homogeneous: pick(mask, 22, on(48)),
                    maxfilesize: pick(mask, 23, n[1]),
                    maxlink: pick(mask, 24, n[2] as u32),
                    maxname: pick(mask, 25, n[3] as u32),
                    maxread: pick(mask, 26, n[0]),
                    maxwrite: pick(mask, 27, n[1]),
                    mode: pick(mask, 28, n[2] as u32),
                    no_trunc: pick(mask, 29, on(49)),
                    numlinks: pick(mask, 30, n[3] as u32),
                    owner: owner.filter(|_| on(31)),
                    owner_group: owner_group.filter(|_| on(32)),
                    rawdev: pick(
                        mask,
                        33,
                        specdata4 {
                            specdata1: n[0] as u32,
                            specdata2: n[1] as u32,
                        },
                    ),
                    space_avail: pick(mask, 34, n[2]),
                    space_free: pick(mask, 35, n[3]),
                    space_total: pick(mask, 36, n[0]),
                    space_used: pick(mask, 37, n[1]),
                    time_access: pick(mask, 38, t1),
                    time_access_set: pick(mask, 39, s1),
                    time_delta: pick(mask, 50, t2),
                    time_metadata: pick(mask, 51, t1),
                    time_modify: pick(mask, 52, t2),
                    time_modify_set: pick(mask, 53, s2),
                    mounted_on_fileid: pick(mask, 54, n[2]),
                    suppattr_exclcreat: pick(mask, 55, b2),
                }
            },
        )
}

// ---- session ----

pub fn state_protect_ops() -> impl Strategy<Value = state_protect_ops4> {
    (bitmap(), bitmap()).prop_map(|(spo_must_enforce, spo_must_allow)| state_protect_ops4 {
        spo_must_enforce,
        spo_must_allow,
    })
}
fn oids() -> impl Strategy<Value = Vec<sec_oid4>> {
    vec(vec(any::<u8>(), 0..12).prop_map(sec_oid4), 0..4)
}
pub fn exchange_id_args() -> impl Strategy<Value = EXCHANGE_ID4args> {
    let protect = prop_oneof![
        Just(state_protect4_a::SP4_NONE),
        state_protect_ops().prop_map(state_protect4_a::SP4_MACH_CRED),
        (
            state_protect_ops(),
            oids(),
            oids(),
            any::<u32>(),
            any::<u32>()
        )
            .prop_map(|(ssp_ops, h, e, w, n)| {
                state_protect4_a::SP4_SSV(ssv_sp_parms4 {
                    ssp_ops,
                    ssp_hash_algs: h,
                    ssp_encr_algs: e,
                    ssp_window: w,
                    ssp_num_gss_handles: n,
                })
            }),
    ];
    (
        verifier(),
        owner_id(),
        any::<u32>(),
        protect,
        proptest::option::of(impl_id()),
    )
        .prop_map(
            |(co_verifier, co_ownerid, eia_flags, eia_state_protect, eia_client_impl_id)| {
                EXCHANGE_ID4args {
                    eia_clientowner: client_owner4 {
                        co_verifier,
                        co_ownerid,
                    },
                    eia_flags,
                    eia_state_protect,
                    eia_client_impl_id,
                }
            },
        )
}
pub fn exchange_id_res() -> impl Strategy<Value = EXCHANGE_ID4res> {
    let handles = vec(vec(any::<u8>(), 0..12).prop_map(gsshandle4_t), 0..3);
    let protect = prop_oneof![
        Just(state_protect4_r::SP4_NONE),
        state_protect_ops().prop_map(state_protect4_r::SP4_MACH_CRED),
        (state_protect_ops(), any::<[u32; 4]>(), handles).prop_map(|(spi_ops, n, spi_handles)| {
            state_protect4_r::SP4_SSV(ssv_prot_info4 {
                spi_ops,
                spi_hash_alg: n[0],
                spi_encr_alg: n[1],
                spi_ssv_len: n[2],
                spi_window: n[3],
                spi_handles,
            })
        }),
    ];
    res((
        (any::<u64>(), any::<u32>(), any::<u32>()),
        protect,
        (any::<u64>(), owner_id(), owner_id()),
        proptest::option::of(impl_id()),
    )
        .prop_map(
            |((clientid, seq, flags), protect, (minor, major, scope), impl_id)| EXCHANGE_ID4resok {
                eir_clientid: clientid,
                eir_sequenceid: seq,
                eir_flags: flags,
                eir_state_protect: protect,
                eir_server_owner: server_owner4 {
                    so_minor_id: minor,
                    so_major_id: major,
                },
                eir_server_scope: scope,
                eir_server_impl_id: impl_id,
            },
        ))
}
pub fn channel_attrs() -> impl Strategy<Value = channel_attrs4> {
    (any::<[u32; 6]>(), proptest::option::of(any::<u32>())).prop_map(|(n, ird)| channel_attrs4 {
        ca_headerpadsize: n[0],
        ca_maxrequestsize: n[1],
        ca_maxresponsesize: n[2],
        ca_maxresponsesize_cached: n[3],
        ca_maxoperations: n[4],
        ca_maxrequests: n[5],
        ca_rdma_ird: ird,
    })
}
pub fn callback_sec_parms() -> impl Strategy<Value = callback_sec_parms4> {
    prop_oneof![
        Just(callback_sec_parms4::AUTH_NONE),
        (
            any::<u32>(),
            vec(any::<u8>(), 0..20),
            any::<u32>(),
            any::<u32>(),
            vec(any::<u32>(), 0..16)
        )
            .prop_map(|(stamp, machine_name, uid, gid, gids)| {
                callback_sec_parms4::AUTH_SYS(AuthSys {
                    stamp,
                    machine_name,
                    uid,
                    gid,
                    gids,
                })
            }),
        (1u32..4, vec(any::<u8>(), 0..8), vec(any::<u8>(), 0..8)).prop_map(|(svc, a, b)| {
            callback_sec_parms4::RPCSEC_GSS(gss_cb_handles4 {
                gcbp_service: rpc_gss_svc_t(svc),
                gcbp_handle_from_server: gsshandle4_t(a),
                gcbp_handle_from_client: gsshandle4_t(b),
            })
        }),
    ]
}
pub fn create_session_args() -> impl Strategy<Value = CREATE_SESSION4args> {
    (
        (any::<u64>(), any::<u32>(), any::<u32>()),
        channel_attrs(),
        channel_attrs(),
        any::<u32>(),
        vec(callback_sec_parms(), 0..3),
    )
        .prop_map(
            |((clientid, seq, flags), fore, back, prog, sec)| CREATE_SESSION4args {
                csa_clientid: clientid,
                csa_sequence: seq,
                csa_flags: flags,
                csa_fore_chan_attrs: fore,
                csa_back_chan_attrs: back,
                csa_cb_program: prog,
                csa_sec_parms: sec,
            },
        )
}
pub fn create_session_res() -> impl Strategy<Value = CREATE_SESSION4res> {
    res((
        sessionid(),
        any::<u32>(),
        any::<u32>(),
        channel_attrs(),
        channel_attrs(),
    )
        .prop_map(|(id, seq, flags, fore, back)| CREATE_SESSION4resok {
            csr_sessionid: id,
            csr_sequence: seq,
            csr_flags: flags,
            csr_fore_chan_attrs: fore,
            csr_back_chan_attrs: back,
        }))
}
pub fn sequence_args() -> impl Strategy<Value = SEQUENCE4args> {
    (sessionid(), any::<[u32; 3]>(), any::<bool>()).prop_map(|(id, n, cache)| SEQUENCE4args {
        sa_sessionid: id,
        sa_sequenceid: n[0],
        sa_slotid: n[1],
        sa_highest_slotid: n[2],
        sa_cachethis: cache,
    })
}
pub fn sequence_ok() -> impl Strategy<Value = SEQUENCE4resok> {
    (sessionid(), any::<[u32; 5]>()).prop_map(|(id, n)| SEQUENCE4resok {
        sr_sessionid: id,
        sr_sequenceid: n[0],
        sr_slotid: n[1],
        sr_highest_slotid: n[2],
        sr_target_highest_slotid: n[3],
        sr_status_flags: n[4],
    })
}
pub fn sequence_res() -> impl Strategy<Value = SEQUENCE4res> {
    res(sequence_ok())
}
pub fn bind_conn_args() -> impl Strategy<Value = BIND_CONN_TO_SESSION4args> {
    (sessionid(), any::<u32>(), any::<bool>()).prop_map(|(id, dir, rdma)| {
        BIND_CONN_TO_SESSION4args {
            bctsa_sessid: id,
            bctsa_dir: channel_dir_from_client4(dir),
            bctsa_use_conn_in_rdma_mode: rdma,
        }
    })
}
pub fn bind_conn_res() -> impl Strategy<Value = BIND_CONN_TO_SESSION4res> {
    res(
        (sessionid(), any::<u32>(), any::<bool>()).prop_map(|(id, dir, rdma)| {
            BIND_CONN_TO_SESSION4resok {
                bctsr_sessid: id,
                bctsr_dir: channel_dir_from_server4(dir),
                bctsr_use_conn_in_rdma_mode: rdma,
            }
        }),
    )
}

// ---- handles, attributes ----

pub fn secinfo_res() -> impl Strategy<Value = SECINFO_NO_NAME4res> {
    let one = prop_oneof![
        any::<u32>()
            .prop_filter("not RPCSEC_GSS", |f| *f != 6)
            .prop_map(secinfo4::Flavor),
        (vec(any::<u8>(), 0..12), any::<u32>(), any::<u32>()).prop_map(|(oid, qop, svc)| {
            secinfo4::RPCSEC_GSS(rpcsec_gss_info {
                oid: sec_oid4(oid),
                qop,
                service: rpc_gss_svc_t(svc),
            })
        }),
    ];
    res(vec(one, 0..4).prop_map(SECINFO4resok))
}
pub fn getattr_res() -> impl Strategy<Value = GETATTR4res> {
    res(fattr().prop_map(|obj_attributes| GETATTR4resok { obj_attributes }))
}
pub fn setattr_args() -> impl Strategy<Value = SETATTR4args> {
    (stateid(), fattr()).prop_map(|(stateid, obj_attributes)| SETATTR4args {
        stateid,
        obj_attributes,
    })
}
pub fn setattr_res() -> impl Strategy<Value = SETATTR4res> {
    (any_status(), bitmap()).prop_map(|(status, attrsset)| SETATTR4res { status, attrsset })
}
pub fn access_res() -> impl Strategy<Value = ACCESS4res> {
    res((any::<u32>(), any::<u32>())
        .prop_map(|(supported, access)| ACCESS4resok { supported, access }))
}

// ---- open, state ----

pub fn open_args() -> impl Strategy<Value = OPEN4args> {
    let how = prop_oneof![
        fattr().prop_map(createhow4::UNCHECKED4),
        fattr().prop_map(createhow4::GUARDED4),
        verifier().prop_map(createhow4::EXCLUSIVE4),
        (verifier(), fattr()).prop_map(|(cva_verf, cva_attrs)| createhow4::EXCLUSIVE4_1(
            creatverfattr {
                cva_verf,
                cva_attrs
            }
        )),
    ];
    let openhow = prop_oneof![
        Just(openflag4::OPEN4_NOCREATE),
        how.prop_map(openflag4::OPEN4_CREATE)
    ];
    let claim = prop_oneof![
        component().prop_map(open_claim4::CLAIM_NULL),
        any::<u32>().prop_map(|t| open_claim4::CLAIM_PREVIOUS(open_delegation_type4(t))),
        (stateid(), component()).prop_map(|(delegate_stateid, file)| {
            open_claim4::CLAIM_DELEGATE_CUR(open_claim_delegate_cur4 {
                delegate_stateid,
                file,
            })
        }),
        component().prop_map(open_claim4::CLAIM_DELEGATE_PREV),
        Just(open_claim4::CLAIM_FH),
        stateid().prop_map(open_claim4::CLAIM_DELEG_CUR_FH),
        Just(open_claim4::CLAIM_DELEG_PREV_FH),
    ];
    (any::<[u32; 3]>(), state_owner(), openhow, claim).prop_map(|(n, owner, openhow, claim)| {
        OPEN4args {
            seqid: n[0],
            share_access: n[1],
            share_deny: n[2],
            owner,
            openhow,
            claim,
        }
    })
}
pub fn open_res() -> impl Strategy<Value = OPEN4res> {
    let limit = prop_oneof![
        any::<u64>().prop_map(nfs_space_limit4::NFS_LIMIT_SIZE),
        (any::<u32>(), any::<u32>()).prop_map(|(num_blocks, bytes_per_block)| {
            nfs_space_limit4::NFS_LIMIT_BLOCKS(nfs_modified_limit4 {
                num_blocks,
                bytes_per_block,
            })
        }),
    ];
    let none = prop_oneof![
        any::<bool>().prop_map(open_none_delegation4::WND4_CONTENTION),
        any::<bool>().prop_map(open_none_delegation4::WND4_RESOURCE),
        any::<u32>()
            .prop_filter("no arm of its own", |w| *w != 1 && *w != 2)
            .prop_map(|w| open_none_delegation4::Why(why_no_delegation4(w))),
    ];
    let delegation = prop_oneof![
        Just(open_delegation4::OPEN_DELEGATE_NONE),
        (stateid(), any::<bool>(), ace()).prop_map(|(stateid, recall, permissions)| {
            open_delegation4::OPEN_DELEGATE_READ(open_read_delegation4 {
                stateid,
                recall,
                permissions,
            })
        }),
        (stateid(), any::<bool>(), limit, ace()).prop_map(
            |(stateid, recall, space_limit, permissions)| {
                open_delegation4::OPEN_DELEGATE_WRITE(open_write_delegation4 {
                    stateid,
                    recall,
                    space_limit,
                    permissions,
                })
            }
        ),
        none.prop_map(open_delegation4::OPEN_DELEGATE_NONE_EXT),
    ];
    res(
        (stateid(), change_info(), any::<u32>(), bitmap(), delegation).prop_map(
            |(stateid, cinfo, rflags, attrset, delegation)| OPEN4resok {
                stateid,
                cinfo,
                rflags,
                attrset,
                delegation,
            },
        ),
    )
}
pub fn close_args() -> impl Strategy<Value = CLOSE4args> {
    (any::<u32>(), stateid()).prop_map(|(seqid, open_stateid)| CLOSE4args {
        seqid,
        open_stateid,
    })
}
pub fn test_stateid_args() -> impl Strategy<Value = TEST_STATEID4args> {
    vec(stateid(), 0..6).prop_map(|ts_stateids| TEST_STATEID4args { ts_stateids })
}
pub fn test_stateid_res() -> impl Strategy<Value = TEST_STATEID4res> {
    res(vec(any_status(), 0..6)
        .prop_map(|tsr_status_codes| TEST_STATEID4resok { tsr_status_codes }))
}

// ---- I/O ----

pub fn read_args() -> impl Strategy<Value = READ4args> {
    (stateid(), any::<u64>(), any::<u32>()).prop_map(|(stateid, offset, count)| READ4args {
        stateid,
        offset,
        count,
    })
}
pub fn read_res() -> impl Strategy<Value = READ4res> {
    res((any::<bool>(), data()).prop_map(|(eof, data)| READ4resok { eof, data }))
}
pub fn write_args() -> impl Strategy<Value = WRITE4args> {
    (stateid(), any::<u64>(), any::<u32>(), data()).prop_map(|(stateid, offset, stable, data)| {
        WRITE4args {
            stateid,
            offset,
            stable: stable_how4(stable),
            data,
        }
    })
}
pub fn write_ok() -> impl Strategy<Value = WRITE4resok> {
    (any::<u32>(), any::<u32>(), verifier()).prop_map(|(count, committed, writeverf)| WRITE4resok {
        count,
        committed: stable_how4(committed),
        writeverf,
    })
}
pub fn write_res() -> impl Strategy<Value = WRITE4res> {
    res(write_ok())
}
pub fn commit_res() -> impl Strategy<Value = COMMIT4res> {
    res(verifier().prop_map(|writeverf| COMMIT4resok { writeverf }))
}

// ---- namespace, directories ----

pub fn create_args() -> impl Strategy<Value = CREATE4args> {
    let objtype = prop_oneof![
        linktext().prop_map(createtype4::NF4LNK),
        (any::<u32>(), any::<u32>()).prop_map(|(a, b)| createtype4::NF4BLK(specdata4 {
            specdata1: a,
            specdata2: b
        })),
        (any::<u32>(), any::<u32>()).prop_map(|(a, b)| createtype4::NF4CHR(specdata4 {
            specdata1: a,
            specdata2: b
        })),
        any::<u32>()
            .prop_filter("no arm of its own", |t| !(3..=5).contains(t))
            .prop_map(|t| createtype4::Other(nfs_ftype4(t))),
    ];
    (objtype, component(), fattr()).prop_map(|(objtype, objname, createattrs)| CREATE4args {
        objtype,
        objname,
        createattrs,
    })
}
pub fn create_res() -> impl Strategy<Value = CREATE4res> {
    res((change_info(), bitmap()).prop_map(|(cinfo, attrset)| CREATE4resok { cinfo, attrset }))
}
pub fn remove_res() -> impl Strategy<Value = REMOVE4res> {
    res(change_info().prop_map(|cinfo| REMOVE4resok { cinfo }))
}
pub fn rename_res() -> impl Strategy<Value = RENAME4res> {
    res(
        (change_info(), change_info()).prop_map(|(source_cinfo, target_cinfo)| RENAME4resok {
            source_cinfo,
            target_cinfo,
        }),
    )
}
pub fn link_res() -> impl Strategy<Value = LINK4res> {
    res(change_info().prop_map(|cinfo| LINK4resok { cinfo }))
}
pub fn readlink_res() -> impl Strategy<Value = READLINK4res> {
    res(linktext().prop_map(|link| READLINK4resok { link }))
}
pub fn readdir_args() -> impl Strategy<Value = READDIR4args> {
    (
        any::<u64>(),
        verifier(),
        any::<u32>(),
        any::<u32>(),
        bitmap(),
    )
        .prop_map(
            |(cookie, cookieverf, dircount, maxcount, attr_request)| READDIR4args {
                cookie,
                cookieverf,
                dircount,
                maxcount,
                attr_request,
            },
        )
}
pub fn readdir_res() -> impl Strategy<Value = READDIR4res> {
    let entry = (any::<u64>(), component(), fattr()).prop_map(|(cookie, name, attrs)| entry4 {
        cookie,
        name,
        attrs,
    });
    res(
        (verifier(), vec(entry, 0..5), any::<bool>()).prop_map(|(cookieverf, entries, eof)| {
            READDIR4resok {
                cookieverf,
                reply: dirlist4 { entries, eof },
            }
        }),
    )
}

// ---- locks ----

pub fn lock_type() -> impl Strategy<Value = nfs_lock_type4> {
    any::<u32>().prop_map(nfs_lock_type4)
}
pub fn lock_args() -> impl Strategy<Value = LOCK4args> {
    let locker = prop_oneof![
        (any::<u32>(), stateid(), any::<u32>(), state_owner()).prop_map(
            |(open_seqid, open_stateid, lock_seqid, lock_owner)| {
                locker4::open_owner(open_to_lock_owner4 {
                    open_seqid,
                    open_stateid,
                    lock_seqid,
                    lock_owner,
                })
            }
        ),
        (stateid(), any::<u32>()).prop_map(|(lock_stateid, lock_seqid)| locker4::lock_owner(
            exist_lock_owner4 {
                lock_stateid,
                lock_seqid
            }
        )),
    ];
    (
        lock_type(),
        any::<bool>(),
        any::<u64>(),
        any::<u64>(),
        locker,
    )
        .prop_map(|(locktype, reclaim, offset, length, locker)| LOCK4args {
            locktype,
            reclaim,
            offset,
            length,
            locker,
        })
}
pub fn denied() -> impl Strategy<Value = LOCK4denied> {
    (any::<u64>(), any::<u64>(), lock_type(), state_owner()).prop_map(
        |(offset, length, locktype, owner)| LOCK4denied {
            offset,
            length,
            locktype,
            owner,
        },
    )
}
/// A failure status that has no arm of its own in LOCK4res/LOCKT4res.
fn lock_fail() -> impl Strategy<Value = nfsstat4> {
    fail_status().prop_filter("DENIED has its arm", |s| *s != nfsstat4::NFS4ERR_DENIED)
}
pub fn lock_res() -> impl Strategy<Value = LOCK4res> {
    prop_oneof![
        stateid().prop_map(LOCK4res::Ok),
        denied().prop_map(LOCK4res::Denied),
        lock_fail().prop_map(LOCK4res::Fail),
    ]
}
pub fn lockt_args() -> impl Strategy<Value = LOCKT4args> {
    (lock_type(), any::<u64>(), any::<u64>(), state_owner()).prop_map(
        |(locktype, offset, length, owner)| LOCKT4args {
            locktype,
            offset,
            length,
            owner,
        },
    )
}
pub fn lockt_res() -> impl Strategy<Value = LOCKT4res> {
    prop_oneof![
        Just(LOCKT4res::Ok),
        denied().prop_map(LOCKT4res::Denied),
        lock_fail().prop_map(LOCKT4res::Fail),
    ]
}
pub fn locku_args() -> impl Strategy<Value = LOCKU4args> {
    (
        lock_type(),
        any::<u32>(),
        stateid(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(
            |(locktype, seqid, lock_stateid, offset, length)| LOCKU4args {
                locktype,
                seqid,
                lock_stateid,
                offset,
                length,
            },
        )
}

// ---- COMPOUND ----

pub fn argop() -> impl Strategy<Value = nfs_argop4> {
    prop_oneof![
        any::<u32>().prop_map(|access| nfs_argop4::OP_ACCESS(ACCESS4args { access })),
        close_args().prop_map(nfs_argop4::OP_CLOSE),
        (any::<u64>(), any::<u32>())
            .prop_map(|(offset, count)| nfs_argop4::OP_COMMIT(COMMIT4args { offset, count })),
        create_args().prop_map(nfs_argop4::OP_CREATE),
        stateid().prop_map(
            |deleg_stateid| nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid })
        ),
        bitmap().prop_map(|attr_request| nfs_argop4::OP_GETATTR(GETATTR4args { attr_request })),
        component().prop_map(|newname| nfs_argop4::OP_LINK(LINK4args { newname })),
        lock_args().prop_map(nfs_argop4::OP_LOCK),
        lockt_args().prop_map(nfs_argop4::OP_LOCKT),
        locku_args().prop_map(nfs_argop4::OP_LOCKU),
        component().prop_map(|objname| nfs_argop4::OP_LOOKUP(LOOKUP4args { objname })),
        open_args().prop_map(nfs_argop4::OP_OPEN),
        fh().prop_map(|object| nfs_argop4::OP_PUTFH(PUTFH4args { object })),
        read_args().prop_map(nfs_argop4::OP_READ),
        readdir_args().prop_map(nfs_argop4::OP_READDIR),
        component().prop_map(|target| nfs_argop4::OP_REMOVE(REMOVE4args { target })),
        (component(), component())
            .prop_map(|(oldname, newname)| nfs_argop4::OP_RENAME(RENAME4args { oldname, newname })),
        setattr_args().prop_map(nfs_argop4::OP_SETATTR),
        write_args().prop_map(nfs_argop4::OP_WRITE),
        bind_conn_args().prop_map(nfs_argop4::OP_BIND_CONN_TO_SESSION),
        exchange_id_args().prop_map(nfs_argop4::OP_EXCHANGE_ID),
        create_session_args().prop_map(nfs_argop4::OP_CREATE_SESSION),
        sessionid().prop_map(|dsa_sessionid| nfs_argop4::OP_DESTROY_SESSION(
            DESTROY_SESSION4args { dsa_sessionid }
        )),
        stateid()
            .prop_map(|fsa_stateid| nfs_argop4::OP_FREE_STATEID(FREE_STATEID4args { fsa_stateid })),
        any::<u32>().prop_map(|s| nfs_argop4::OP_SECINFO_NO_NAME(secinfo_style4(s))),
        component().prop_map(|name| nfs_argop4::OP_SECINFO(SECINFO4args { name })),
        sequence_args().prop_map(nfs_argop4::OP_SEQUENCE),
        test_stateid_args().prop_map(nfs_argop4::OP_TEST_STATEID),
        any::<u64>().prop_map(|dca_clientid| nfs_argop4::OP_DESTROY_CLIENTID(
            DESTROY_CLIENTID4args { dca_clientid }
        )),
        any::<bool>().prop_map(|rca_one_fs| nfs_argop4::OP_RECLAIM_COMPLETE(
            RECLAIM_COMPLETE4args { rca_one_fs }
        )),
        prop::sample::select(vec![
            nfs_argop4::OP_GETFH,
            nfs_argop4::OP_LOOKUPP,
            nfs_argop4::OP_PUTROOTFH,
            nfs_argop4::OP_READLINK,
            nfs_argop4::OP_RESTOREFH,
            nfs_argop4::OP_SAVEFH,
            nfs_argop4::OP_ILLEGAL,
        ]),
    ]
}

pub fn resop() -> impl Strategy<Value = nfs_resop4> {
    let status = |f: fn(nfsstat4) -> nfs_resop4| any_status().prop_map(f);
    prop_oneof![
        access_res().prop_map(nfs_resop4::OP_ACCESS),
        res(stateid()).prop_map(nfs_resop4::OP_CLOSE),
        commit_res().prop_map(nfs_resop4::OP_COMMIT),
        create_res().prop_map(nfs_resop4::OP_CREATE),
        status(nfs_resop4::OP_DELEGRETURN),
        getattr_res().prop_map(nfs_resop4::OP_GETATTR),
        res(fh().prop_map(|object| GETFH4resok { object })).prop_map(nfs_resop4::OP_GETFH),
        link_res().prop_map(nfs_resop4::OP_LINK),
        lock_res().prop_map(nfs_resop4::OP_LOCK),
        lockt_res().prop_map(nfs_resop4::OP_LOCKT),
        res(stateid()).prop_map(nfs_resop4::OP_LOCKU),
        status(nfs_resop4::OP_LOOKUP),
        status(nfs_resop4::OP_LOOKUPP),
        open_res().prop_map(nfs_resop4::OP_OPEN),
        status(nfs_resop4::OP_PUTFH),
        status(nfs_resop4::OP_PUTROOTFH),
        read_res().prop_map(nfs_resop4::OP_READ),
        readdir_res().prop_map(nfs_resop4::OP_READDIR),
        readlink_res().prop_map(nfs_resop4::OP_READLINK),
        remove_res().prop_map(nfs_resop4::OP_REMOVE),
        rename_res().prop_map(nfs_resop4::OP_RENAME),
        status(nfs_resop4::OP_RESTOREFH),
        status(nfs_resop4::OP_SAVEFH),
        setattr_res().prop_map(nfs_resop4::OP_SETATTR),
        write_res().prop_map(nfs_resop4::OP_WRITE),
        bind_conn_res().prop_map(nfs_resop4::OP_BIND_CONN_TO_SESSION),
        exchange_id_res().prop_map(nfs_resop4::OP_EXCHANGE_ID),
        create_session_res().prop_map(nfs_resop4::OP_CREATE_SESSION),
        status(nfs_resop4::OP_DESTROY_SESSION),
        status(nfs_resop4::OP_FREE_STATEID),
        secinfo_res().prop_map(nfs_resop4::OP_SECINFO_NO_NAME),
        secinfo_res().prop_map(nfs_resop4::OP_SECINFO),
        sequence_res().prop_map(nfs_resop4::OP_SEQUENCE),
        test_stateid_res().prop_map(nfs_resop4::OP_TEST_STATEID),
        status(nfs_resop4::OP_DESTROY_CLIENTID),
        status(nfs_resop4::OP_RECLAIM_COMPLETE),
        fail_status().prop_map(nfs_resop4::OP_ILLEGAL),
    ]
}

pub fn compound_args() -> impl Strategy<Value = COMPOUND4args> {
    (utf8(), any::<u32>(), vec(argop(), 0..6)).prop_map(|(tag, minorversion, argarray)| {
        COMPOUND4args {
            tag,
            minorversion,
            argarray,
        }
    })
}

/// A COMPOUND4res as the RFC shapes it: results in order, the first
/// failure last, the COMPOUND status the last result's (or anything with
/// no results).
pub fn compound_res() -> impl Strategy<Value = COMPOUND4res> {
    (utf8(), vec(resop(), 0..6), any_status()).prop_map(|(tag, results, empty_status)| {
        let mut resarray = Vec::new();
        for r in results {
            let failed = !r.status().is_ok();
            resarray.push(r);
            if failed {
                break;
            }
        }
        let status = resarray.last().map_or(empty_status, nfs_resop4::status);
        COMPOUND4res {
            status,
            tag,
            resarray,
        }
    })
}

// ---- callbacks ----

pub fn cb_sequence_args() -> impl Strategy<Value = CB_SEQUENCE4args> {
    let call =
        (any::<u32>(), any::<u32>()).prop_map(|(rc_sequenceid, rc_slotid)| referring_call4 {
            rc_sequenceid,
            rc_slotid,
        });
    let list = (sessionid(), vec(call, 0..3)).prop_map(|(rcl_sessionid, rcl_referring_calls)| {
        referring_call_list4 {
            rcl_sessionid,
            rcl_referring_calls,
        }
    });
    (
        sessionid(),
        any::<[u32; 3]>(),
        any::<bool>(),
        vec(list, 0..3),
    )
        .prop_map(|(id, n, cache, lists)| CB_SEQUENCE4args {
            csa_sessionid: id,
            csa_sequenceid: n[0],
            csa_slotid: n[1],
            csa_highest_slotid: n[2],
            csa_cachethis: cache,
            csa_referring_call_lists: lists,
        })
}
pub fn cb_argop() -> impl Strategy<Value = nfs_cb_argop4> {
    let recall_any = || {
        (any::<u32>(), bitmap()).prop_map(|(craa_objects_to_keep, craa_type_mask)| {
            CB_RECALL_ANY4args {
                craa_objects_to_keep,
                craa_type_mask,
            }
        })
    };
    let notify = (bitmap(), data()).prop_map(|(notify_mask, notify_vals)| notify4 {
        notify_mask,
        notify_vals,
    });
    prop_oneof![
        (fh(), bitmap()).prop_map(|(fh, attr_request)| nfs_cb_argop4::OP_CB_GETATTR(
            CB_GETATTR4args { fh, attr_request }
        )),
        (stateid(), any::<bool>(), fh()).prop_map(|(stateid, truncate, fh)| {
            nfs_cb_argop4::OP_CB_RECALL(CB_RECALL4args {
                stateid,
                truncate,
                fh,
            })
        }),
        (stateid(), fh(), vec(notify, 0..3)).prop_map(|(cna_stateid, cna_fh, cna_changes)| {
            nfs_cb_argop4::OP_CB_NOTIFY(CB_NOTIFY4args {
                cna_stateid,
                cna_fh,
                cna_changes,
            })
        }),
        recall_any().prop_map(nfs_cb_argop4::OP_CB_RECALL_ANY),
        recall_any().prop_map(nfs_cb_argop4::OP_CB_RECALLABLE_OBJ_AVAIL),
        any::<u32>().prop_map(
            |rsa_target_highest_slotid| nfs_cb_argop4::OP_CB_RECALL_SLOT(CB_RECALL_SLOT4args {
                rsa_target_highest_slotid
            })
        ),
        cb_sequence_args().prop_map(nfs_cb_argop4::OP_CB_SEQUENCE),
        (any::<bool>(), any::<bool>()).prop_map(|(a, b)| nfs_cb_argop4::OP_CB_WANTS_CANCELLED(
            CB_WANTS_CANCELLED4args {
                cwca_contended_wants_cancelled: a,
                cwca_resourced_wants_cancelled: b,
            }
        )),
        (fh(), state_owner()).prop_map(|(cnla_fh, cnla_lock_owner)| {
            nfs_cb_argop4::OP_CB_NOTIFY_LOCK(CB_NOTIFY_LOCK4args {
                cnla_fh,
                cnla_lock_owner,
            })
        }),
        Just(nfs_cb_argop4::OP_CB_ILLEGAL),
    ]
}
/// Operation numbers whose arguments are not decoded (known or not).
pub fn cb_not_decoded() -> impl Strategy<Value = nfs_cb_argop4> {
    prop_oneof![
        prop::sample::select(vec![5u32, 7, 14]),
        any::<u32>().prop_filter("not decoded", |n| !(3..=14).contains(n) && *n != 10044),
    ]
    .prop_map(|n| nfs_cb_argop4::NotDecoded(nfs_cb_opnum4(n)))
}
pub fn cb_compound_args() -> impl Strategy<Value = CB_COMPOUND4args> {
    (
        utf8(),
        any::<u32>(),
        any::<u32>(),
        vec(cb_argop(), 0..4),
        proptest::option::of(cb_not_decoded()),
    )
        .prop_map(|(tag, minorversion, callback_ident, mut argarray, last)| {
            argarray.extend(last);
            CB_COMPOUND4args {
                tag,
                minorversion,
                callback_ident,
                argarray,
            }
        })
}
pub fn cb_resop() -> impl Strategy<Value = nfs_cb_resop4> {
    let seq_ok = (sessionid(), any::<[u32; 4]>()).prop_map(|(id, n)| CB_SEQUENCE4resok {
        csr_sessionid: id,
        csr_sequenceid: n[0],
        csr_slotid: n[1],
        csr_highest_slotid: n[2],
        csr_target_highest_slotid: n[3],
    });
    prop_oneof![
        res(fattr()).prop_map(nfs_cb_resop4::OP_CB_GETATTR),
        res(seq_ok).prop_map(nfs_cb_resop4::OP_CB_SEQUENCE),
        (
            prop::sample::select(vec![4u32, 5, 6, 7, 8, 9, 10, 12, 13, 14, 10044]),
            any_status()
        )
            .prop_map(|(op, s)| nfs_cb_resop4::Status(nfs_cb_opnum4(op), s)),
    ]
}
pub fn cb_compound_res() -> impl Strategy<Value = CB_COMPOUND4res> {
    (any_status(), utf8(), vec(cb_resop(), 0..4)).prop_map(|(status, tag, resarray)| {
        CB_COMPOUND4res {
            status,
            tag,
            resarray,
        }
    })
}
