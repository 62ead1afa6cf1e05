//! Settings that change while the SM runs (what ibsmd re-reads on SIGHUP, as OpenSM's
//! options marked changeable at run time), beside `set_sweep_interval` and
//! `set_partitions`. Each checks the changed configuration with
//! [`crate::SmConfig::validate`] first, so a refused value changes nothing.

use crate::config::SmConfigError;

use super::SubnetManager;

impl SubnetManager {
    /// Changes this SM's priority (OpenSM's `sm_priority`). SMInfo answers carry it at
    /// once; the election acts on it at the Master's next sweep: a Master now outranked
    /// by an authenticated Standby hands over after that sweep, and a Standby now
    /// outranking its Master is handed control then. (OpenSM's Standby also prompts the
    /// Master with trap 144; ours does not send it, so the Master's next sweep it is.)
    ///
    /// # Errors
    /// [`SmConfigError::OutOfRange`] above 15; nothing changes then.
    pub fn set_priority(&mut self, priority: u8) -> Result<(), SmConfigError> {
        let mut next = self.cfg.clone();
        next.priority = priority;
        next.validate()?;
        self.cfg.priority = priority;
        // The range was checked just above with the same bound.
        if let Err(e) = self.smi.election.set_priority(priority) {
            tracing::error!("election refused priority {priority}: {e}");
        }
        Ok(())
    }

    /// Changes the SMP window's floor (OpenSM's `max_wire_smps`): the window never
    /// shrinks below it and, if it is below it now, opens to it at once.
    ///
    /// # Errors
    /// [`SmConfigError::Zero`] for 0, [`SmConfigError::WindowAboveLimit`] above
    /// `max_wire_smps_limit`; nothing changes then.
    pub fn set_max_wire_smps(&mut self, smps: usize) -> Result<(), SmConfigError> {
        let mut next = self.cfg.clone();
        next.max_wire_smps = smps;
        next.validate()?;
        self.cfg.max_wire_smps = smps;
        self.smps.raise_window_to(smps);
        Ok(())
    }
}
