//! `SubnetManager::new` / `with_store` refuse what `SmConfig::validate` refuses, and a
//! local port the election cannot use, with typed errors instead of clamping or
//! panicking.

use ibsm_manager::{ConfigField, MemoryLidStore, SmConfig, SmConfigError, SmError, SubnetManager};
use ibsm_transport::LocalPort;

fn port(guid: u64) -> LocalPort {
    LocalPort {
        node_guid: guid,
        port_guid: guid,
        port_num: 1,
        lid: 0,
    }
}

#[test]
fn invalid_configuration_is_an_error_not_a_clamp() {
    let mut cfg = SmConfig::default();
    cfg.priority = 16;
    let e = SubnetManager::new(cfg.clone(), port(7)).expect_err("priority 16");
    assert!(
        matches!(
            e,
            SmError::Config(SmConfigError::OutOfRange {
                field: ConfigField::Priority,
                value: 16,
                ..
            })
        ),
        "{e:?}"
    );
    let e = SubnetManager::with_store(cfg, port(7), Box::new(MemoryLidStore::default()))
        .expect_err("priority 16");
    assert!(matches!(e, SmError::Config(_)), "{e:?}");
    // The source chain reaches the SmConfigError.
    let src = std::error::Error::source(&e).expect("source");
    assert!(src.downcast_ref::<SmConfigError>().is_some(), "{src:?}");
}

#[test]
fn zero_polling_timeout_is_an_error_not_a_panic() {
    let mut cfg = SmConfig::default();
    cfg.polling_timeout = std::time::Duration::ZERO;
    let e = SubnetManager::new(cfg, port(7)).expect_err("zero polling timeout");
    assert!(
        matches!(
            e,
            SmError::Config(SmConfigError::Zero {
                field: ConfigField::PollingTimeout,
                ..
            })
        ),
        "{e:?}"
    );
}

#[test]
fn zero_port_guid_is_the_elections_error() {
    let e = SubnetManager::new(SmConfig::default(), port(0)).expect_err("GUID 0");
    assert!(
        matches!(
            e,
            SmError::Election(ibsm_election::ElectionConfigError::ZeroGuid)
        ),
        "{e:?}"
    );
}

#[test]
fn valid_configuration_builds() {
    let mut cfg = SmConfig::default();
    cfg.priority = 15;
    let sm = SubnetManager::new(cfg, port(7)).expect("valid");
    assert_eq!(sm.config().priority, 15);
}
