//! The client of an organization's compliance HTTP service (step 4 of the gate in
//! `domain::compliance`, which decides when to ask and what a refusal is called).
//!
//! It posts the question as JSON and reads `{"allowed": bool, "reason"?: string}`.
//! No answer in time, a non-2xx status or any other answer is [`Answer::Unavailable`]
//! (the gate fails closed). A failure is logged with its class only (`timeout`,
//! `status 500`, ...): what the service answered never reaches a log line.

use std::time::Duration;

use serde::Deserialize;

use crate::http_client::HttpClient;
use crate::http_failure::Failure;

/// What to ask, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub url: String,
    pub body: serde_json::Value,
    pub timeout: Duration,
}

/// What the service said.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Allowed,
    /// Refused, with its reason when it gave one.
    Refused(Option<String>),
    /// No usable answer.
    Unavailable,
}

#[derive(Deserialize)]
struct ServiceAnswer {
    allowed: bool,
    reason: Option<String>,
}

/// Asks the service `question`.
pub async fn ask(client: &HttpClient, question: &Question) -> Answer {
    let body = question.body.to_string().into_bytes();
    match client
        .post_json(&question.url, body, question.timeout)
        .await
    {
        Ok((status, answer)) if (200..300).contains(&status) => {
            match serde_json::from_slice::<ServiceAnswer>(&answer) {
                Ok(ServiceAnswer { allowed: true, .. }) => Answer::Allowed,
                Ok(ServiceAnswer {
                    allowed: false,
                    reason,
                }) => Answer::Refused(reason),
                Err(_) => {
                    // The class only: what the service answered is never repeated.
                    let failure = Failure::Malformed;
                    tracing::warn!(%failure, "the compliance service's answer is not {{\"allowed\": bool}}");
                    Answer::Unavailable
                }
            }
        }
        Ok((status, _)) => {
            let failure = Failure::Status(status);
            tracing::warn!(%failure, "the compliance service refused to answer");
            Answer::Unavailable
        }
        Err(e) => {
            let failure = Failure::of_transport(&e);
            tracing::warn!(%failure, "the compliance service did not answer");
            Answer::Unavailable
        }
    }
}
