//! The compliance gate's orchestration, one for every outbound attempt: the outreach
//! the API and the console start (a message, a message sent elsewhere, an outbound
//! call) and the scheduler's claims. The organization's compliance service is slow, so
//! it is asked outside the writer (`providers::compliance`); the write job then re-runs
//! the local steps, so an opt-out committed meanwhile still blocks the attempt
//! (`domain::contact::compliance` holds the steps and what an answer means).

use std::sync::Arc;

use serde_json::Value;

use super::Engine;
use crate::channel::Channel;
use crate::domain::contact::compliance::{self, Block, Gate, Initiative};
use crate::domain::conversation::handling;
use crate::domain::engagement::gate::{self as outbound_gate, Outcome};
use crate::domain::engagement::outbound;
use crate::domain::engagement::reactions::React;
use crate::domain::records::messages::{self, MessageInput};
use crate::domain::voice::voice;
use crate::domain::Caller;
use crate::error::Result;
use crate::providers::compliance::Question;
use crate::store::rows::{CallRecord, LeadRecord, Origin, Person, Purpose};
use crate::store::{EventRow, Reader, WriteTx};

impl Engine {
    /// The gate for an attempt on `channel` to lead `lead_id`, then `send` inside the
    /// write job when it may go: steps 1 to 3 and quiet hours on a snapshot (a block
    /// there asks no service), the compliance service, then `compliance::pass`.
    pub async fn gate<T, F>(
        &self,
        caller: Caller,
        lead_id: &str,
        channel: Channel,
        initiative: Initiative,
        send: F,
    ) -> Result<Outcome<T>>
    where
        T: Send + 'static,
        F: FnMut(&mut WriteTx, &Caller, LeadRecord) -> Result<T> + Send + 'static,
    {
        let early =
            match compliance::first_steps(&self.store, &caller, lead_id, channel, initiative)? {
                Gate::Blocked(block) => Some(block),
                Gate::Ask(question) => self.ask(&question).await,
                Gate::Clear => None,
            };
        outbound_gate::pass(
            &self.store,
            caller,
            lead_id,
            channel,
            initiative,
            early,
            send,
        )
        .await
    }

    /// The compliance service's answer for a claim's attempt on `channel` (a cadence
    /// step, a reply, a call), when the organization has one for that channel. The
    /// claim runs the local steps itself, inside its write (a step in quiet hours is
    /// deferred there, not blocked), so only the service is asked here.
    pub(super) async fn ask_service(
        &self,
        org: &str,
        lead: &str,
        channel: Channel,
    ) -> Result<Option<Block>> {
        let (org_record, lead_record) = {
            let read = self.store.read()?;
            let Some(org_record) = read.org(org)? else {
                return Ok(None);
            };
            let Some(lead_record) = read.lead(org, lead)? else {
                return Ok(None);
            };
            (org_record, lead_record)
        };
        let Some(question) = compliance::service_question(&org_record, &lead_record, channel)
        else {
            return Ok(None);
        };
        Ok(self.ask(&question).await)
    }

    /// Step 4: asks the service `question`; the block its answer means, if any.
    async fn ask(&self, question: &Question) -> Option<Block> {
        compliance::service_block(crate::providers::compliance::ask(&self.client, question).await)
    }

    /// Sends `input`'s text to the lead through the gate and the channel's provider, as
    /// `origin` (the API, or a person in the console): the message event, or the block.
    pub async fn send_message(
        self: &Arc<Self>,
        caller: Caller,
        lead_id: &str,
        input: &MessageInput,
        origin: Origin,
    ) -> Result<Outcome<EventRow>> {
        self.send_through_gate(caller, lead_id, input, origin, None)
            .await
    }

    /// A person's message from the console: like [`Engine::send_message`], and when the
    /// gate lets it go, the person takes the lead over (`handling::take_over`) in the
    /// same write that records it, so a blocked send leaves the assistant and the owner
    /// as they were.
    pub async fn send_as_person(
        self: &Arc<Self>,
        caller: Caller,
        lead_id: &str,
        input: &MessageInput,
        person: Person,
    ) -> Result<Outcome<EventRow>> {
        let origin = Origin::Human(person.clone());
        self.send_through_gate(caller, lead_id, input, origin, Some(person))
            .await
    }

    /// The gate, then the provider; `taking_over`: the person who takes the lead over in
    /// the write that records a send the gate let go.
    async fn send_through_gate(
        self: &Arc<Self>,
        caller: Caller,
        lead_id: &str,
        input: &MessageInput,
        origin: Origin,
        taking_over: Option<Person>,
    ) -> Result<Outcome<EventRow>> {
        let channel = input.channel;
        let text = input.text().to_string();
        let subject = input
            .content
            .get("subject")
            .and_then(Value::as_str)
            .map(str::to_string);
        let send = move |tx: &mut WriteTx, caller: &Caller, lead: LeadRecord| {
            let lead = match &taking_over {
                Some(person) => handling::take_over(tx, caller, person, &lead.id)?,
                None => lead,
            };
            outbound::begin(
                tx,
                &caller.org_id,
                lead,
                channel,
                &text,
                subject.as_deref(),
                origin.clone(),
            )
        };
        Ok(
            match self
                .gate(caller, lead_id, channel, Initiative::Message, send)
                .await?
            {
                Outcome::Sent(attempt) => {
                    let row = attempt.event.clone();
                    self.deliver(attempt).await?;
                    Outcome::Sent(row)
                }
                Outcome::Blocked(event) => Outcome::Blocked(event),
            },
        )
    }

    /// `recordOnly`: a message sent elsewhere, recorded after the gate.
    pub async fn record_message(
        &self,
        caller: Caller,
        lead_id: &str,
        input: MessageInput,
    ) -> Result<Outcome<EventRow>> {
        let channel = input.channel;
        let send = move |tx: &mut WriteTx, caller: &Caller, lead: LeadRecord| {
            messages::record(tx, caller, &lead.id, input.clone()).react(tx)
        };
        self.gate(caller, lead_id, channel, Initiative::Message, send)
            .await
    }

    /// An outbound call to the lead: queued after the gate and dialled through the
    /// voice provider in the background (`dial`); the queued call, or the block.
    pub async fn request_call(
        self: &Arc<Self>,
        caller: Caller,
        lead_id: &str,
    ) -> Result<Outcome<CallRecord>> {
        let send = |tx: &mut WriteTx, caller: &Caller, lead: LeadRecord| {
            let call = voice::start_outbound(tx, &caller.org_id, &lead, false, String::new())?;
            Ok((call, lead.phone))
        };
        let org_id = caller.org_id.clone();
        let marketing = Initiative::Outreach(Purpose::Marketing);
        Ok(
            match self
                .gate(caller, lead_id, Channel::Voice, marketing, send)
                .await?
            {
                Outcome::Sent((call, to)) => {
                    self.dial(org_id, call.id.clone(), to);
                    Outcome::Sent(call)
                }
                Outcome::Blocked(event) => Outcome::Blocked(event),
            },
        )
    }
}
