//! Fetching a call's finished recording from its provider, from a durable agenda row
//! (`JobKind::FetchRecording`) the recording callback scheduled.
//!
//! The audio streams from the provider into the recording store (`RecordingUpload`:
//! chunk by chunk, never whole in memory), bounded by `recording_max_bytes`. A failure
//! the provider may get over (a 5xx, a 404 before the file is ready, a dropped
//! connection) is tried again after each of [`RETRY_AFTER`]'s waits, from a new row;
//! then, or at once for a recording too large or a URL outside the provider, it is
//! given up with a log line and a metric. `GET /v1/calls/{id}/recording` then serves
//! it like an uploaded one.

use std::time::Duration;

use super::Engine;
use crate::domain::engagement::agenda::{self, JobKey};
use crate::domain::records::recording_upload::RecordingUpload;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::providers::twilio::{FetchError, Twilio};
use crate::store::rows::{JobKind, ProviderSettings};
use crate::store::Reader;
use crate::time::now_micros;

/// The waits before the second to sixth tries.
pub const RETRY_AFTER: [Duration; 5] = [
    Duration::from_secs(1),
    Duration::from_secs(5),
    Duration::from_secs(30),
    Duration::from_secs(120),
    Duration::from_secs(600),
];

/// A recording's content type as providers serve `.mp3`.
const AUDIO_MPEG: &str = "audio/mpeg";

impl Engine {
    pub(super) async fn fetch_recording(
        &self,
        key: JobKey,
        org: &str,
        lead: &str,
        call_id: &str,
        url: &str,
        attempt: u32,
    ) -> Result<()> {
        let settings = self.store.read()?.engine_settings(org)?.voice;
        let fetched = match settings {
            ProviderSettings::Twilio(settings) => {
                self.download(&Twilio::new(settings), org, call_id, url)
                    .await
            }
            _ => Err(FetchError {
                retryable: false,
                message: "the organization's voice provider is not Twilio any more".into(),
            }),
        };
        let (org, lead) = (org.to_string(), lead.to_string());
        match fetched {
            Ok(size) => {
                self.metrics.recording("fetched");
                tracing::info!(
                    org,
                    call = call_id,
                    bytes = size,
                    "a call recording was fetched"
                );
                self.store
                    .write(move |tx| agenda::done(tx, &key).map(|_| ()))
                    .await
            }
            Err(e) if e.retryable && (attempt as usize) < RETRY_AFTER.len() => {
                self.metrics.recording("retried");
                let wait = RETRY_AFTER[attempt as usize];
                tracing::warn!(org, call = call_id, error = %e.message, retry_in_seconds = wait.as_secs(), "a call recording could not be fetched; trying again");
                let due = now_micros() + wait.as_micros() as i64;
                let kind = JobKind::FetchRecording {
                    call_id: call_id.to_string(),
                    url: url.to_string(),
                    attempt: attempt + 1,
                };
                self.store
                    .write(move |tx| agenda::retry_at(tx, &key, &org, &lead, due, kind.clone()))
                    .await
            }
            Err(e) => {
                self.metrics.recording("given_up");
                tracing::error!(org, call = call_id, error = %e.message, "a call recording was given up");
                self.store
                    .write(move |tx| agenda::done(tx, &key).map(|_| ()))
                    .await
            }
        }
    }

    /// Streams the recording into the store; answers its size.
    async fn download(
        &self,
        twilio: &Twilio,
        org: &str,
        call_id: &str,
        url: &str,
    ) -> std::result::Result<u64, FetchError> {
        let mut stream = twilio.open_recording(&self.client, url).await?;
        let too_large = || FetchError {
            retryable: false,
            message: format!(
                "the recording is larger than recording_max_bytes ({})",
                self.recording_max_bytes
            ),
        };
        if stream
            .content_length()
            .is_some_and(|n| n > self.recording_max_bytes)
        {
            return Err(too_large());
        }
        let stored = |e: Error| match e {
            Error::PayloadTooLarge => too_large(),
            // A call deleted meanwhile, a full disk: trying again may help.
            other => FetchError {
                retryable: true,
                message: other.to_string_for_logs(),
            },
        };
        let mut upload = RecordingUpload::begin(
            self.store.clone(),
            Caller::system(org),
            call_id,
            self.recording_max_bytes,
        )
        .await
        .map_err(stored)?;
        let mut size = 0u64;
        while let Some(chunk) = stream.next_chunk().await {
            let chunk = chunk.map_err(|message| FetchError {
                retryable: true,
                message,
            })?;
            size += chunk.len() as u64;
            upload.write(&chunk).await.map_err(stored)?;
        }
        upload
            .finish(AUDIO_MPEG.to_string())
            .await
            .map_err(stored)?;
        Ok(size)
    }
}
