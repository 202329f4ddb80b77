//! The sandbox provider, the default: every send is accepted and nothing leaves the
//! machine. Messages are `delivered` with an `sbx_` id; calls complete at once.
//! `latency_ms` makes each acceptance take that long, to try the engine against a slow
//! provider (and to test a send cut short by a crash).

use std::time::Duration;

use super::{CallOutcome, CallRequest, CallStatus, Outgoing, SendOutcome};
use crate::store::rows::SendStatus;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    latency: Duration,
}

impl Sandbox {
    pub fn new(latency_ms: u64) -> Sandbox {
        Sandbox {
            latency: Duration::from_millis(latency_ms),
        }
    }

    async fn wait(&self) {
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
    }

    pub async fn accept(&self, _message: &Outgoing) -> SendOutcome {
        self.wait().await;
        SendOutcome::Accepted {
            provider_message_id: crate::ids::generate("sbx"),
            status: SendStatus::Delivered,
        }
    }

    /// A call, complete as soon as it is placed (no transcript, no recording).
    pub async fn call(&self, _call: &CallRequest) -> CallOutcome {
        self.wait().await;
        CallOutcome::Accepted {
            provider_call_id: crate::ids::generate("sbx"),
            status: CallStatus::Complete,
        }
    }
}
