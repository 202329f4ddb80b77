//! The CalDAV client (RFC 4791): one calendar collection of a CalDAV server (Radicale,
//! Nextcloud, Baïkal, Fastmail, iCloud, ...) reached over HTTPS (plain HTTP too, for a
//! server on the same machine), with HTTP Basic credentials, through the one outbound
//! [`HttpClient`] (rustls, bounded timeout, bounded answer).
//!
//! - [`CalDav::busy`]: a `calendar-query` REPORT (Depth: 1) over a time range asking the
//!   server to expand recurrences; each `calendar-data` read into busy intervals by
//!   [`busy`] (recurring masters expanded locally where the server did not).
//! - [`CalDav::put`] writes `{collection}{uid}.ics` (`If-None-Match: *` on create),
//!   [`CalDav::delete`] removes it, [`CalDav::get`] reads it back.
//! - [`CalDav::test_connection`]: is it a calendar collection, and how many events in the
//!   coming week.
//! - [`BusyCache`]: what the availability reads instead of the network.
//!
//! Every failure is a [`CalDavError`] in words an operator reads in the server's log.
//! What an organization reads (a 424, the console, a meeting's `syncError`) is
//! [`CalDavError::public_text`]: a closed port, a silent one, TLS trouble, an HTML page,
//! a redirect or any other status all read [`UNREACHABLE`], so a CalDAV URL cannot be
//! used to tell the ports of a network apart. Redirects are never followed
//! (`http_client`). No store, no domain: the caller runs these calls outside the
//! writer and commits what they say.

pub mod busy;
pub mod cache;
pub mod windows_zones;
pub mod xml;
pub mod zones;

use std::time::Duration;

use base64::Engine as _;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use hyper::Method;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::http_client::{Answer, HttpClient, RequestError};

pub use busy::{Busy, Window};
pub use cache::BusyCache;

/// How long one CalDAV request may take, connecting and reading included.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// How long reading one answer's events may take (the expansion's own budget,
/// [`busy::READ_TIME`], ends it sooner; this bounds the wait whatever happens).
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Reads each `calendar-data` of a REPORT's answer under one budget.
fn read_responses(
    responses: Vec<xml::DavResponse>,
    window: &Window,
) -> Result<BusyRead, CalDavError> {
    let mut budget = busy::Budget::new();
    let mut read = BusyRead::default();
    for response in responses {
        let Some(data) = response.calendar_data.filter(|d| !d.trim().is_empty()) else {
            continue;
        };
        let mut report = busy::busy_report(&data, window, &mut budget)
            .map_err(|e| CalDavError::InvalidEvent(format!("{}: {}", response.href, e.0)))?;
        read.busy.append(&mut report.busy);
        read.events += report.events;
        read.unreadable_zones.append(&mut report.unreadable_zones);
        for uid in engaged_uids(&data) {
            read.engaged_events.push((uid, data.clone()));
        }
    }
    read.busy.sort();
    read.busy.dedup();
    // Named, at most this many: the rest counted.
    const NAMED: usize = 20;
    if read.unreadable_zones.len() > NAMED {
        let more = read.unreadable_zones.len() - NAMED;
        read.unreadable_zones.truncate(NAMED);
        read.unreadable_zones.push(format!("and {more} more"));
    }
    read.too_many = budget.too_many;
    Ok(read)
}

/// The largest answer read (a REPORT over months of a busy calendar fits).
pub const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// A UID's characters kept as they are in the event's file name; the rest
/// percent-encoded (a `/` never makes a path).
const UID_SET: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'@');

/// One calendar collection and the credentials to it.
#[derive(Clone)]
pub struct CalDav {
    /// The collection's URL, ending in `/`.
    url: String,
    username: String,
    password: String,
    timeout: Duration,
    max_answer_bytes: usize,
}

impl std::fmt::Debug for CalDav {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CalDav")
            .field("url", &self.url)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// What one read of a collection's busy times found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BusyRead {
    /// Busy intervals, sorted, clipped to the range read.
    pub busy: Vec<Busy>,
    /// Events the server returned (free ones included).
    pub events: usize,
    /// Events whose time zone could not be read, in words (held busy for their whole
    /// days).
    pub unreadable_zones: Vec<String>,
    /// The `calendar-data` of each object holding an event engaged wrote (a `UID`
    /// ending in `@engaged`), by that UID: what the owner's calendar holds for them.
    pub engaged_events: Vec<(String, String)>,
    /// Events whose recurrence was too much to expand, each busy from its start to the
    /// end of the range: their `SUMMARY` (else `UID`).
    pub too_many: Vec<String>,
}

/// The `UID`s of `ics`'s events that end in `@engaged` (engaged's own meetings).
fn engaged_uids(ics: &str) -> Vec<String> {
    if !ics.contains("@engaged") {
        return Vec::new();
    }
    let unfolded = icalendar::parser::unfold(ics);
    let Ok(calendar) = icalendar::parser::read_calendar(&unfolded) else {
        return Vec::new();
    };
    let mut uids: Vec<String> = calendar
        .components
        .iter()
        .filter(|c| c.name.as_str().eq_ignore_ascii_case("VEVENT"))
        .filter_map(|c| c.find_prop("UID"))
        .map(|p| p.val.as_str().trim().to_string())
        .filter(|uid| uid.ends_with("@engaged"))
        .collect();
    uids.dedup();
    uids
}

/// Whether a `put` creates the event or replaces the one there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutMode {
    /// Only if no event of that UID exists (`If-None-Match: *`).
    Create,
    /// Whatever is there (a reschedule, with a higher `SEQUENCE`).
    Replace,
}

/// An event as the collection holds it, with its `ETag` when the server gave one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub ics: String,
    pub etag: Option<String>,
}

/// What went wrong, in words an operator reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CalDavError {
    #[error("the CalDAV URL is not valid: {0}")]
    BadUrl(String),
    #[error("the CalDAV server cannot be reached: {0}")]
    Unreachable(String),
    #[error("the CalDAV server's certificate is not trusted")]
    UntrustedCertificate,
    #[error("wrong username or password")]
    Unauthorized,
    #[error("this account may not use this calendar (403 Forbidden)")]
    Forbidden,
    #[error("the URL is not a calendar collection")]
    NotACalendar,
    #[error("the CalDAV server's answer is not XML ({0})")]
    NotXml(String),
    #[error("the CalDAV server's answer is larger than {} KiB", .0 / 1024)]
    TooLarge(usize),
    #[error("an event with this UID is already in the calendar")]
    AlreadyExists,
    #[error("the event was changed in the calendar since engaged wrote it")]
    ChangedOnServer,
    #[error("the event is not valid iCalendar: {0}")]
    InvalidEvent(String),
    #[error("the CalDAV server answered {0}")]
    Status(u16),
}

/// What an organization reads of every failure to reach and read the CalDAV server.
pub const UNREACHABLE: &str = "the CalDAV server could not be reached";

impl CalDavError {
    /// The words an organization reads (an API answer, the console, `syncError`): the
    /// URL's own faults, the credentials refused (401), a collection that is not a
    /// calendar (told by a WebDAV multistatus), an event already there or not valid;
    /// anything else [`UNREACHABLE`]. The detail (`Display`) goes to the log only.
    pub fn public_text(&self) -> String {
        match self {
            CalDavError::BadUrl(_)
            | CalDavError::Unauthorized
            | CalDavError::NotACalendar
            | CalDavError::AlreadyExists
            | CalDavError::ChangedOnServer => self.to_string(),
            CalDavError::InvalidEvent(_) => "an event is not valid iCalendar".into(),
            CalDavError::Unreachable(_)
            | CalDavError::UntrustedCertificate
            | CalDavError::Forbidden
            | CalDavError::NotXml(_)
            | CalDavError::TooLarge(_)
            | CalDavError::Status(_) => UNREACHABLE.into(),
        }
    }
}

impl CalDav {
    /// A collection at `url` (`http` or `https`, with a host; a `/` added at the end when
    /// missing) with Basic credentials.
    pub fn new(url: &str, username: &str, password: &str) -> Result<CalDav, CalDavError> {
        let uri: hyper::Uri = url
            .trim()
            .parse()
            .map_err(|_| CalDavError::BadUrl("write it as https://host/path/".into()))?;
        match uri.scheme_str() {
            Some("https") | Some("http") => {}
            _ => return Err(CalDavError::BadUrl("it must start with https://".into())),
        }
        if uri.host().is_none_or(str::is_empty) {
            return Err(CalDavError::BadUrl("it has no host".into()));
        }
        if uri.query().is_some() {
            return Err(CalDavError::BadUrl("it may not have a query".into()));
        }
        let mut url = uri.to_string();
        if !url.ends_with('/') {
            url.push('/');
        }
        Ok(CalDav {
            url,
            username: username.to_string(),
            password: password.to_string(),
            timeout: TIMEOUT,
            max_answer_bytes: MAX_ANSWER_BYTES,
        })
    }

    /// The same collection with other bounds on a request's time and answer.
    pub fn with_bounds(mut self, timeout: Duration, max_answer_bytes: usize) -> CalDav {
        self.timeout = timeout;
        self.max_answer_bytes = max_answer_bytes;
        self
    }

    /// The collection's URL, ending in `/`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Which collection this is, whatever the case of its scheme and host or a missing
    /// final `/`: its URL with those lowercased (what an event's `ETag` belongs to).
    pub fn identity(&self) -> String {
        let (scheme, rest) = self.url.split_once("://").unwrap_or(("", &self.url));
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        format!(
            "{}://{}{}",
            scheme.to_ascii_lowercase(),
            authority.to_ascii_lowercase(),
            path
        )
    }

    /// The URL of the event `uid`: `{collection}{uid}.ics`.
    pub fn event_url(&self, uid: &str) -> Result<String, CalDavError> {
        if uid.is_empty() {
            return Err(CalDavError::InvalidEvent("the UID is empty".into()));
        }
        Ok(format!(
            "{}{}.ics",
            self.url,
            utf8_percent_encode(uid, UID_SET)
        ))
    }

    /// The busy intervals of the collection over `[from, to)`, clipped to it; all-day
    /// events are read in `zone`.
    pub async fn busy(
        &self,
        client: &HttpClient,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        zone: Tz,
    ) -> Result<Vec<Busy>, CalDavError> {
        self.read_busy(client, &Window { from, to, zone })
            .await
            .map(|read| read.busy)
    }

    /// The busy intervals, how many events the server returned, the events whose time
    /// zone could not be read (held busy for their whole days) and those whose
    /// recurrence was too much to expand (busy to the end of the range). The answer is
    /// read on a blocking thread under a [`busy::Budget`], never on a runtime worker;
    /// past [`READ_TIMEOUT`] the read fails.
    pub async fn read_busy(
        &self,
        client: &HttpClient,
        window: &Window,
    ) -> Result<BusyRead, CalDavError> {
        if window.to <= window.from {
            return Ok(BusyRead::default());
        }
        let body = xml::calendar_query(window.from, window.to);
        let answer = self
            .send(
                client,
                webdav(b"REPORT")?,
                &self.url,
                &[("depth", "1".into())],
                body,
                XML,
            )
            .await?;
        match answer.status {
            207 | 200 => {}
            status => return Err(refused(status)),
        }
        let responses = multistatus(&answer)?;
        let window = *window;
        let reading = tokio::task::spawn_blocking(move || read_responses(responses, &window));
        match tokio::time::timeout(READ_TIMEOUT, reading).await {
            Ok(Ok(read)) => read,
            Ok(Err(_)) | Err(_) => Err(CalDavError::InvalidEvent(
                "the events took too long to read".into(),
            )),
        }
    }

    /// Writes the event `uid` (an iCalendar object, checked to parse first); the new
    /// `ETag` when the server answered one.
    pub async fn put(
        &self,
        client: &HttpClient,
        uid: &str,
        ics: &str,
        mode: PutMode,
    ) -> Result<Option<String>, CalDavError> {
        self.put_if(client, uid, ics, mode, None).await
    }

    /// [`CalDav::put`], replacing only the version whose `ETag` is `if_match`
    /// (`If-Match`, RFC 7232 §3.1): 412 is [`CalDavError::ChangedOnServer`].
    pub async fn put_if(
        &self,
        client: &HttpClient,
        uid: &str,
        ics: &str,
        mode: PutMode,
        if_match: Option<&str>,
    ) -> Result<Option<String>, CalDavError> {
        icalendar::parser::read_calendar(&icalendar::parser::unfold(ics)).map_err(|e| {
            CalDavError::InvalidEvent(
                e.lines()
                    .next()
                    .unwrap_or_default()
                    .chars()
                    .take(200)
                    .collect(),
            )
        })?;
        let url = self.event_url(uid)?;
        let mut headers = Vec::new();
        match (mode, if_match) {
            (PutMode::Create, _) => headers.push(("if-none-match", "*".to_string())),
            (PutMode::Replace, Some(etag)) => headers.push(("if-match", etag.to_string())),
            (PutMode::Replace, None) => {}
        }
        let answer = self
            .send(
                client,
                Method::PUT,
                &url,
                &headers,
                ics.as_bytes().to_vec(),
                CALENDAR,
            )
            .await?;
        match answer.status {
            200..=299 => Ok(answer.etag),
            412 if mode == PutMode::Create => Err(CalDavError::AlreadyExists),
            412 => Err(CalDavError::ChangedOnServer),
            status => Err(refused(status)),
        }
    }

    /// Deletes the event `uid`; one that is not there counts as deleted.
    pub async fn delete(&self, client: &HttpClient, uid: &str) -> Result<(), CalDavError> {
        self.delete_if(client, uid, None).await
    }

    /// [`CalDav::delete`] of the version whose `ETag` is `if_match` only: 412 is
    /// [`CalDavError::ChangedOnServer`].
    pub async fn delete_if(
        &self,
        client: &HttpClient,
        uid: &str,
        if_match: Option<&str>,
    ) -> Result<(), CalDavError> {
        let url = self.event_url(uid)?;
        let headers: Vec<(&'static str, String)> = if_match
            .map(|etag| vec![("if-match", etag.to_string())])
            .unwrap_or_default();
        let answer = self
            .send(client, Method::DELETE, &url, &headers, Vec::new(), None)
            .await?;
        match answer.status {
            200..=299 | 404 | 410 => Ok(()),
            412 => Err(CalDavError::ChangedOnServer),
            status => Err(refused(status)),
        }
    }

    /// The iCalendar text of the event `uid` as the server holds it, if it is there.
    pub async fn get(&self, client: &HttpClient, uid: &str) -> Result<Option<String>, CalDavError> {
        Ok(self.get_held(client, uid).await?.map(|held| held.ics))
    }

    /// The event `uid` as the server holds it, with its `ETag`, if it is there.
    pub async fn get_held(
        &self,
        client: &HttpClient,
        uid: &str,
    ) -> Result<Option<Held>, CalDavError> {
        let url = self.event_url(uid)?;
        let answer = self
            .send(client, Method::GET, &url, &[], Vec::new(), None)
            .await?;
        match answer.status {
            200 => String::from_utf8(answer.body.to_vec())
                .map(|ics| {
                    Some(Held {
                        ics,
                        etag: answer.etag.clone(),
                    })
                })
                .map_err(|_| CalDavError::InvalidEvent("not UTF-8".into())),
            404 | 410 => Ok(None),
            status => Err(refused(status)),
        }
    }

    /// Checks that the URL is a calendar collection these credentials read, then reads
    /// the coming week's busy times: how many events it saw.
    pub async fn test_connection(&self, client: &HttpClient) -> Result<usize, CalDavError> {
        self.test_read(client).await.map(|read| read.events)
    }

    /// [`CalDav::test_connection`], with all the week's read said (the events whose
    /// time zone could not be read too).
    pub async fn test_read(&self, client: &HttpClient) -> Result<BusyRead, CalDavError> {
        let answer = self
            .send(
                client,
                webdav(b"PROPFIND")?,
                &self.url,
                &[("depth", "0".into())],
                xml::propfind_resourcetype(),
                XML,
            )
            .await?;
        match answer.status {
            207 => {}
            status => return Err(refused(status)),
        }
        if !multistatus(&answer)?.iter().any(|r| r.is_calendar) {
            return Err(CalDavError::NotACalendar);
        }
        let from = Utc::now();
        let window = Window {
            from,
            to: from + chrono::Duration::days(7),
            zone: Tz::UTC,
        };
        self.read_busy(client, &window).await
    }

    async fn send(
        &self,
        client: &HttpClient,
        method: Method,
        url: &str,
        extra: &[(&'static str, String)],
        body: Vec<u8>,
        content_type: Option<&'static str>,
    ) -> Result<Answer, CalDavError> {
        let credentials = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", self.username, self.password));
        let mut headers = vec![("authorization", format!("Basic {credentials}"))];
        if let Some(content_type) = content_type {
            headers.push(("content-type", content_type.to_string()));
        }
        headers.extend(extra.iter().cloned());
        client
            .request(
                method,
                url,
                &headers,
                body,
                self.timeout,
                self.max_answer_bytes,
            )
            .await
            .map_err(|e| match e {
                RequestError::TimedOut(t) if t.as_secs() > 0 => {
                    CalDavError::Unreachable(format!("no answer within {} s", t.as_secs()))
                }
                RequestError::TimedOut(t) => {
                    CalDavError::Unreachable(format!("no answer within {} ms", t.as_millis()))
                }
                RequestError::TooLarge(bound) => CalDavError::TooLarge(bound),
                RequestError::Failed(e) if e.tls_certificate => CalDavError::UntrustedCertificate,
                RequestError::Failed(e) => CalDavError::Unreachable(unreachable_words(&e.message)),
            })
    }
}

/// A WebDAV method (`REPORT`, `PROPFIND`): a valid token, so never refused by `http`.
fn webdav(name: &'static [u8]) -> Result<Method, CalDavError> {
    Method::from_bytes(name).map_err(|_| CalDavError::Status(0))
}

const XML: Option<&str> = Some("application/xml; charset=utf-8");
const CALENDAR: Option<&str> = Some("text/calendar; charset=utf-8");

/// A multistatus answer, or why it is not one.
fn multistatus(answer: &Answer) -> Result<Vec<xml::DavResponse>, CalDavError> {
    xml::multistatus(&answer.body).map_err(|e| {
        let got = answer
            .content_type
            .as_deref()
            .map(|t| format!("it is {}", t.split(';').next().unwrap_or(t).trim()))
            .unwrap_or_else(|| "it has no content type".into());
        match e {
            xml::NotMultistatus::NotXml(_) => CalDavError::NotXml(got),
            xml::NotMultistatus::OtherRoot(root) => CalDavError::NotXml(format!(
                "{got}, a <{root}> document instead of a multistatus"
            )),
        }
    })
}

/// An answer's status that refuses: 401, 403, or the status itself.
fn refused(status: u16) -> CalDavError {
    match status {
        401 => CalDavError::Unauthorized,
        403 => CalDavError::Forbidden,
        status => CalDavError::Status(status),
    }
}

/// Why a connection failed, shortly: refused, not resolved, or the client's words.
fn unreachable_words(message: &str) -> String {
    let lower = message.to_ascii_lowercase();
    if lower.contains("refused address") {
        "its address is refused (outbound_allow_private = false)".into()
    } else if lower.contains("refused") {
        "connection refused".into()
    } else if lower.contains("dns") || lower.contains("lookup") || lower.contains("resolve") {
        "its host name does not resolve".into()
    } else if lower.contains("timed out") || lower.contains("timeout") {
        "the connection timed out".into()
    } else {
        message.chars().take(200).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_collection_url_is_checked_and_ends_in_a_slash() {
        let cal = CalDav::new("https://cal.acme.example/ana/sales", "ana", "pw").unwrap();
        assert_eq!(cal.url(), "https://cal.acme.example/ana/sales/");
        assert_eq!(
            cal.event_url("a b/c@x").unwrap(),
            "https://cal.acme.example/ana/sales/a%20b%2Fc@x.ics"
        );
        assert!(cal.event_url("").is_err());
        for bad in [
            "",
            "cal.acme.example/ana",
            "ftp://cal/x/",
            "https:///x",
            "https://h/x?y=1",
        ] {
            assert!(
                matches!(CalDav::new(bad, "a", "b"), Err(CalDavError::BadUrl(_))),
                "{bad}"
            );
        }
        assert!(!format!("{cal:?}").contains("pw"));
        assert_eq!(
            CalDav::new("HTTPS://Cal.Acme.Example/Ana/Sales", "a", "b")
                .unwrap()
                .identity(),
            "https://cal.acme.example/Ana/Sales/"
        );
    }

    #[test]
    fn what_an_organization_reads_does_not_tell_ports_apart() {
        for detail in [
            CalDavError::Unreachable("connection refused".into()),
            CalDavError::Unreachable("no answer within 10 s".into()),
            CalDavError::UntrustedCertificate,
            CalDavError::NotXml("it is text/html".into()),
            CalDavError::Status(302),
            CalDavError::Status(404),
            CalDavError::Forbidden,
            CalDavError::TooLarge(MAX_ANSWER_BYTES),
        ] {
            assert_eq!(detail.public_text(), UNREACHABLE, "{detail}");
        }
        assert_eq!(
            CalDavError::Unauthorized.public_text(),
            "wrong username or password"
        );
        assert_eq!(
            CalDavError::NotACalendar.public_text(),
            "the URL is not a calendar collection"
        );
    }

    #[test]
    fn errors_read_as_words() {
        assert_eq!(
            CalDavError::Unauthorized.to_string(),
            "wrong username or password"
        );
        assert_eq!(
            CalDavError::TooLarge(MAX_ANSWER_BYTES).to_string(),
            "the CalDAV server's answer is larger than 4096 KiB"
        );
        assert_eq!(
            unreachable_words(
                "client error (Connect): tcp connect error: Connection refused (os error 111)"
            ),
            "connection refused"
        );
    }
}
