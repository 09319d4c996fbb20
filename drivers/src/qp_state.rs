//! The queue pair state machine as the kernel enforces it (`ib_modify_qp_is_ok` in
//! `drivers/infiniband/core/verbs.c`), checked before a modify is sent so that an invalid transition
//! or attribute set is a precise, typed error rather than the kernel's bare `EINVAL`.

use uverbs_uapi as uapi;

/// `IB_QP_*` / `IBV_QP_*` attribute mask bits (the two numberings agree), by short names; the values
/// are `uverbs_uapi`'s.
pub mod mask {
    pub use uverbs_uapi::{
        IB_QP_ACCESS_FLAGS as ACCESS_FLAGS, IB_QP_ALT_PATH as ALT_PATH, IB_QP_AV as AV,
        IB_QP_CAP as CAP, IB_QP_CUR_STATE as CUR_STATE, IB_QP_DEST_QPN as DEST_QPN,
        IB_QP_EN_SQD_ASYNC_NOTIFY as EN_SQD_ASYNC_NOTIFY,
        IB_QP_MAX_DEST_RD_ATOMIC as MAX_DEST_RD_ATOMIC, IB_QP_MAX_QP_RD_ATOMIC as MAX_QP_RD_ATOMIC,
        IB_QP_MIN_RNR_TIMER as MIN_RNR_TIMER, IB_QP_PATH_MIG_STATE as PATH_MIG_STATE,
        IB_QP_PATH_MTU as PATH_MTU, IB_QP_PKEY_INDEX as PKEY_INDEX, IB_QP_PORT as PORT,
        IB_QP_QKEY as QKEY, IB_QP_RETRY_CNT as RETRY_CNT, IB_QP_RNR_RETRY as RNR_RETRY,
        IB_QP_RQ_PSN as RQ_PSN, IB_QP_SQ_PSN as SQ_PSN, IB_QP_STATE as STATE,
        IB_QP_TIMEOUT as TIMEOUT,
    };
}

/// `IB_QPS_*` / `IBV_QPS_*` queue pair states (the two numberings agree), by short names; the values
/// are `uverbs_uapi`'s.
pub mod state {
    pub use uverbs_uapi::{
        IB_QPS_ERR as ERR, IB_QPS_INIT as INIT, IB_QPS_RESET as RESET, IB_QPS_RTR as RTR,
        IB_QPS_RTS as RTS, IB_QPS_SQD as SQD, IB_QPS_SQE as SQE,
    };
}

use mask::*;
use state::*;

/// The attributes a transition requires and allows, for one transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// Must be in the mask.
    pub required: u32,
    /// May be in the mask.
    pub optional: u32,
}

const fn r(required: u32, optional: u32) -> Option<Rule> {
    Some(Rule { required, optional })
}

/// The rule for `from → to` on transport `qp_type` (`IB_UVERBS_QPT_*`), or `None` if the transition is
/// not allowed.
pub fn rule(qp_type: u8, from: u8, to: u8) -> Option<Rule> {
    const RC: u8 = uapi::IB_UVERBS_QPT_RC;
    const UC: u8 = uapi::IB_UVERBS_QPT_UC;
    const UD: u8 = uapi::IB_UVERBS_QPT_UD;
    let t = qp_type;
    match (from, to) {
        (_, RESET) if from <= ERR => r(0, 0),
        (RESET, ERR) => None,
        (_, ERR) if from <= ERR => r(0, 0),
        (RESET, INIT) => match t {
            RC | UC => r(PKEY_INDEX | PORT | ACCESS_FLAGS, 0),
            UD => r(PKEY_INDEX | PORT | QKEY, 0),
            _ => None,
        },
        (INIT, INIT) => match t {
            RC | UC => r(0, PKEY_INDEX | PORT | ACCESS_FLAGS),
            UD => r(0, PKEY_INDEX | PORT | QKEY),
            _ => None,
        },
        (INIT, RTR) => match t {
            RC => r(
                AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER,
                ALT_PATH | ACCESS_FLAGS | PKEY_INDEX,
            ),
            UC => r(
                AV | PATH_MTU | DEST_QPN | RQ_PSN,
                ALT_PATH | ACCESS_FLAGS | PKEY_INDEX,
            ),
            UD => r(0, PKEY_INDEX | QKEY),
            _ => None,
        },
        (RTR, RTS) => match t {
            RC => r(
                TIMEOUT | RETRY_CNT | RNR_RETRY | SQ_PSN | MAX_QP_RD_ATOMIC,
                CUR_STATE | ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE,
            ),
            UC => r(SQ_PSN, CUR_STATE | ALT_PATH | ACCESS_FLAGS | PATH_MIG_STATE),
            UD => r(SQ_PSN, CUR_STATE | QKEY),
            _ => None,
        },
        (RTS, RTS) | (SQD, RTS) => match t {
            RC => r(
                0,
                CUR_STATE | ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE | MIN_RNR_TIMER,
            ),
            UC => r(0, CUR_STATE | ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE),
            UD => r(0, CUR_STATE | QKEY),
            _ => None,
        },
        (RTS, SQD) => r(0, EN_SQD_ASYNC_NOTIFY),
        (SQD, SQD) => match t {
            RC => r(
                0,
                PORT | AV
                    | TIMEOUT
                    | RETRY_CNT
                    | RNR_RETRY
                    | MAX_QP_RD_ATOMIC
                    | MAX_DEST_RD_ATOMIC
                    | ALT_PATH
                    | ACCESS_FLAGS
                    | PKEY_INDEX
                    | MIN_RNR_TIMER
                    | PATH_MIG_STATE,
            ),
            UC => r(
                0,
                AV | ALT_PATH | ACCESS_FLAGS | PKEY_INDEX | PATH_MIG_STATE,
            ),
            UD => r(0, PKEY_INDEX | QKEY),
            _ => None,
        },
        (SQE, RTS) => match t {
            RC => r(0, 0),
            UC => r(0, CUR_STATE | ACCESS_FLAGS),
            UD => r(0, CUR_STATE | QKEY),
            _ => None,
        },
        _ => None,
    }
}

/// Why a modify was refused before reaching the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The transition is not allowed at all.
    Transition {
        /// The current state.
        from: u8,
        /// The requested one.
        to: u8,
    },
    /// Required attributes are missing.
    Missing(u32),
    /// Attributes the transition does not take were given.
    Unexpected(u32),
}

/// Checks a modify of a `qp_type` queue pair in state `from` with attribute mask `mask`, moving to
/// `to` (equal to `from` when the mask has no `STATE`).
pub fn check(qp_type: u8, from: u8, to: u8, mask: u32) -> Result<(), Refusal> {
    let Some(rule) = rule(qp_type, from, to) else {
        return Err(Refusal::Transition { from, to });
    };
    if mask & CUR_STATE != 0 && !matches!(from, RTR | RTS | SQD | SQE) {
        return Err(Refusal::Unexpected(CUR_STATE));
    }
    let missing = rule.required & !mask;
    if missing != 0 {
        return Err(Refusal::Missing(missing));
    }
    let unexpected = mask & !(rule.required | rule.optional | STATE);
    if unexpected != 0 {
        return Err(Refusal::Unexpected(unexpected));
    }
    Ok(())
}

/// The names of the attribute bits in `bits`.
pub fn mask_names(bits: u32) -> String {
    const NAMES: [&str; 21] = [
        "STATE",
        "CUR_STATE",
        "EN_SQD_ASYNC_NOTIFY",
        "ACCESS_FLAGS",
        "PKEY_INDEX",
        "PORT",
        "QKEY",
        "AV",
        "PATH_MTU",
        "TIMEOUT",
        "RETRY_CNT",
        "RNR_RETRY",
        "RQ_PSN",
        "MAX_QP_RD_ATOMIC",
        "ALT_PATH",
        "MIN_RNR_TIMER",
        "SQ_PSN",
        "MAX_DEST_RD_ATOMIC",
        "PATH_MIG_STATE",
        "CAP",
        "DEST_QPN",
    ];
    let mut names: Vec<String> = (0..21)
        .filter(|i| bits & (1 << i) != 0)
        .map(|i| NAMES[i as usize].to_owned())
        .collect();
    if bits >> 21 != 0 {
        names.push(format!("{:#x}", bits & !((1 << 21) - 1)));
    }
    names.join("|")
}

#[cfg(test)]
mod tests {
    use super::*;
    const RC: u8 = uapi::IB_UVERBS_QPT_RC;
    const UD: u8 = uapi::IB_UVERBS_QPT_UD;

    #[test]
    fn the_rc_handshake_masks_pass() {
        // The masks ibverbs' handshake and rc_pingpong use.
        assert_eq!(
            check(RC, RESET, INIT, STATE | PKEY_INDEX | PORT | ACCESS_FLAGS),
            Ok(())
        );
        assert_eq!(check(RC, INIT, RTR, 0x129181), Ok(()));
        assert_eq!(check(RC, RTR, RTS, 0x12e01), Ok(()));
    }

    #[test]
    fn invalid_transitions_and_masks_are_refused() {
        assert_eq!(
            check(RC, RESET, RTS, STATE),
            Err(Refusal::Transition {
                from: RESET,
                to: RTS
            })
        );
        assert_eq!(
            check(RC, RESET, ERR, STATE),
            Err(Refusal::Transition {
                from: RESET,
                to: ERR
            })
        );
        assert_eq!(
            check(RC, RTR, RTR, STATE),
            Err(Refusal::Transition { from: RTR, to: RTR })
        );
        assert_eq!(
            check(RC, RESET, INIT, STATE | PORT | PKEY_INDEX),
            Err(Refusal::Missing(ACCESS_FLAGS))
        );
        assert_eq!(
            check(
                RC,
                RESET,
                INIT,
                STATE | PORT | PKEY_INDEX | ACCESS_FLAGS | QKEY
            ),
            Err(Refusal::Unexpected(QKEY))
        );
        assert_eq!(
            check(UD, RESET, INIT, STATE | PORT | PKEY_INDEX | ACCESS_FLAGS),
            Err(Refusal::Missing(QKEY))
        );
        assert_eq!(check(RC, INIT, RESET, STATE), Ok(()));
        assert_eq!(check(RC, RTS, ERR, STATE), Ok(()));
        assert_eq!(mask_names(ACCESS_FLAGS | QKEY), "ACCESS_FLAGS|QKEY");
    }
}
