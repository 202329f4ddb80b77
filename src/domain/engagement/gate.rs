//! The gate's writes: an outbound attempt that passed contact's compliance checks
//! (`contact::compliance`, which only reads) is sent, or its block is recorded as a
//! `COMPLIANCE_BLOCKED` event, in one write job that checks the local steps again.

use serde_json::json;

use crate::channel::Channel;
use crate::domain::contact::compliance::{recheck, Block, Initiative};
use crate::domain::engagement::reactions::React;
use crate::domain::records::events;
use crate::domain::records::leads;
use crate::domain::Caller;
use crate::error::Result;
use crate::store::rows::{LeadRecord, SystemEvent};
use crate::store::{EventRow, Store, WriteTx};

/// The result of an outbound attempt.
pub enum Outcome<T> {
    Sent(T),
    Blocked(EventRow),
}

/// In one write job, for an attempt on `channel` to lead `lead_id`: the local steps
/// again, then either `send`s or records the block (the local steps', else `early`,
/// what [`first_steps`] and the service came to).
pub async fn pass<T, F>(
    store: &Store,
    caller: Caller,
    lead_id: &str,
    channel: Channel,
    initiative: Initiative,
    early: Option<Block>,
    mut send: F,
) -> Result<Outcome<T>>
where
    T: Send + 'static,
    F: FnMut(&mut WriteTx, &Caller, LeadRecord) -> Result<T> + Send + 'static,
{
    let lead_id = lead_id.to_string();
    store
        .write(move |tx| {
            let lead = leads::live_lead(tx, &caller, &lead_id)?;
            match recheck(
                tx,
                &caller.org_id,
                &lead,
                channel,
                initiative,
                early.clone(),
            )? {
                Some(block) => Ok(Outcome::Blocked(record_block(
                    tx,
                    &caller.org_id,
                    lead,
                    channel,
                    &block,
                    None,
                )?)),
                None => Ok(Outcome::Sent(send(tx, &caller, lead)?)),
            }
        })
        .await
}

/// Writes the `COMPLIANCE_BLOCKED` event; its id is the block's own. A cadence step's
/// block names the step (1-based), which the campaign's funnel counts.
pub fn record_block(
    tx: &mut WriteTx,
    org: &str,
    lead: LeadRecord,
    channel: Channel,
    block: &Block,
    step: Option<u32>,
) -> Result<EventRow> {
    let id = crate::ids::generate("blk");
    let mut data = json!({"reason": block.reason, "source": block.source.as_str(), "channel": channel.as_str()});
    if let Some(step) = step {
        data["step"] = json!(step);
    }
    let (row, _) = events::record(
        tx,
        org,
        lead,
        SystemEvent::ComplianceBlocked.as_str(),
        &id,
        data,
        |_| {},
    )
    .react(tx)?;
    Ok(row)
}
