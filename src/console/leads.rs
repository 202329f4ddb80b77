//! `/console/leads`: the lead list with its filters, search, sort, pages of 50 with the
//! total, and "Export CSV" of the filtered set (streamed, page by page).
//!
//! The query is `domain::records::search`'s, the same as `GET /v1/leads/search`: the
//! form's fields carry the API's parameter names.

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::{Response, StatusCode};
use maud::{html, Markup};

use super::layout::{self, badges, lead_name};
use super::respond;
use super::session::Visitor;
use crate::api::response::Body;
use crate::api::AppState;
use crate::csv_cell::{neutralize, Column};
use crate::cursor::CursorKey;
use crate::domain::records::search::{self, After, LeadFilter, Sort, STATES, STOP_REASONS};
use crate::error::{Error, Result};
use crate::store::facet::Flag;
use crate::store::rows::CampaignName;
use crate::store::Reader;

/// Leads on one page.
const PAGE: usize = 50;
/// Leads read per snapshot while a CSV export streams.
const CSV_BATCH: usize = 500;
/// The most `additionalInfo.<key>` columns an export carries (the first keys found).
const EXPORT_INFO_KEYS: usize = 100;

/// The query string's filter and its page token (`nextToken`, as the API's: sealed
/// for the organization and the filter by `search::seal_next`), not yet opened.
fn parse(query: &str) -> Result<(LeadFilter, Option<String>)> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
        .map_err(|_| Error::BadRequest("The address's query could not be read".into()))?;
    let token = pairs
        .iter()
        .find(|(k, v)| k == "nextToken" && !v.trim().is_empty())
        .map(|(_, v)| v.trim().to_string());
    let filter = LeadFilter::from_params(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    Ok((filter, token))
}

/// The page of `token` for `filter` in `org`: a token changed by hand, or made for
/// another filter, is refused in words a person reads.
fn open_page(
    key: &CursorKey,
    org: &str,
    filter: &LeadFilter,
    token: &str,
) -> std::result::Result<After, String> {
    search::open_token(key, org, filter, token).map_err(|_| {
        "This page's link is not valid: it was changed, or made for another search. \
         Showing the first page."
            .to_string()
    })
}

/// The query string of `filter`'s page starting after `next` (`None`: the first page).
fn query_string(
    key: &CursorKey,
    org: &str,
    filter: &LeadFilter,
    next: Option<&After>,
) -> Result<String> {
    let mut params = filter.params();
    if let Some(next) = next {
        params.push(("nextToken", search::seal_next(key, org, filter, next)?));
    }
    Ok(serde_urlencoded::to_string(params).unwrap_or_default())
}

/// `GET /console/leads`.
pub fn list(state: &AppState, visitor: &Visitor, query: &str) -> Result<Response<Body>> {
    let org = visitor.org();
    let key = state.store.cursor_key();
    let (filter, after, problem) = match parse(query) {
        Ok((filter, None)) => (filter, None, None),
        Ok((filter, Some(token))) => match open_page(key, org, &filter, &token) {
            Ok(after) => (filter, Some(after), None),
            Err(problem) => (filter, None, Some(problem)),
        },
        Err(e) => (LeadFilter::default(), None, Some(e.to_string())),
    };
    let read = state.store.read()?;
    let page = search::search(&read, org, &filter, PAGE, after.as_ref())?;
    let first_page = query_string(key, org, &filter, None)?;
    let next_page = match &page.next {
        Some(next) => Some(query_string(key, org, &filter, Some(next))?),
        None => None,
    };
    let settings = read.engine_settings(org)?;
    let country = crate::phone::Country::parse(&settings.default_country);
    let zone = settings.time_zone;
    let profile_names = read.campaign_names(org)?;
    let mut rows = Vec::with_capacity(page.leads.len());
    for found in &page.leads {
        if let Some(lead) = read.lead(org, &found.id)? {
            let engagement = read.engagement(org, &found.id)?;
            rows.push((lead, engagement));
        }
    }
    let total = page.total;
    let markup = layout::page(
        "Leads",
        Some(visitor),
        html! {
            h1 { "Leads" }
            @if let Some(problem) = &problem {
                p.error role="alert" { (problem) }
            }
            (filters(&filter, &profile_names))
            div.toolbar {
                p #total aria-live="polite" { strong { (total) } @if total == 1 { " lead" } @else { " leads" } }
                @if visitor.user.role.at_least(crate::store::rows::Role::Agent) {
                    a href={ "/console/leads.csv?" (first_page) } { "Export CSV" }
                    " "
                    a href="/console/import" { "Import" }
                    " "
                    a.button href="/console/new-lead" { "Add lead" }
                }
            }
            @if visitor.user.role.at_least(crate::store::rows::Role::Agent) {
                (super::enrolments::bulk_form(&filter, total, &profile_names))
            }
            div.table-wrap {
                table.leads.cards {
                    caption.muted { "Newest " (if filter.sort == Sort::Created { "created" } else { "activity" }) " first" }
                    thead { tr {
                        th scope="col" { "Name" }
                        th scope="col" { "Phone" }
                        th scope="col" { "Email" }
                        th scope="col" { "Campaign" }
                        th scope="col" { "State" }
                        th scope="col" { "Last activity" }
                    } }
                    tbody {
                        @for (lead, engagement) in &rows {
                            tr {
                                td data-label="Name" {
                                    a href={ "/console/leads/" (lead.id) } { (lead_name(lead)) }
                                    " " (badges(lead.is_hot, lead.is_qualified))
                                }
                                td data-label="Phone" { @if !lead.phone.is_empty() { (crate::phone::shown(&lead.phone, country)) } }
                                td data-label="Email" { (lead.email) }
                                td data-label="Campaign" { (CampaignName::label_of(&profile_names, &lead.customer_profile)) }
                                td data-label="State" { (state_words(engagement.as_ref())) }
                                td data-label="Last activity" { (layout::time(lead.last_activity_at, &zone)) }
                            }
                        }
                    }
                }
            }
            @if rows.is_empty() {
                p.notice { "No lead matches." }
            }
            nav.pager aria-label="Pages" {
                @if after.is_some() {
                    a href={ "/console/leads?" (first_page) } { "First page" }
                }
                @if let Some(next_page) = &next_page {
                    a href={ "/console/leads?" (next_page) } { "Next page" }
                }
            }
        },
    );
    let status = if problem.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    Ok(respond::html(status, markup))
}

/// An engagement's state in words, with its stop reason.
pub fn state_words(e: Option<&crate::store::rows::EngagementRecord>) -> String {
    match e.filter(|e| !e.profile.is_empty()) {
        None => "none".into(),
        Some(e) => match e.stopped_reason {
            Some(reason) if e.state == crate::store::rows::EngagementState::Stopped => {
                format!("stopped ({})", reason.words())
            }
            _ => e.state.as_str().into(),
        },
    }
}

fn filters(filter: &LeadFilter, profiles: &[CampaignName]) -> Markup {
    let yes_no = |flag: Flag, label: &'static str, yes: &'static str, no: &'static str| {
        let value = filter.flag(flag);
        let name = flag.param();
        html! {
            div {
                label for=(name) { (label) }
                select #(name) name=(name) {
                    option value="" selected[value.is_none()] { "Any" }
                    option value="true" selected[value == Some(true)] { (yes) }
                    option value="false" selected[value == Some(false)] { (no) }
                }
            }
        }
    };
    // The filters beyond the search fold under "More filters" (open on a desktop's
    // width, and wherever one is set), so that they never fill a phone's first screen.
    let narrowed = filter.profile.is_some()
        || filter.state.is_some()
        || filter.stopped_reason.is_some()
        || !filter.flags.is_empty()
        || filter.tag.is_some()
        || filter.sort != Sort::Activity;
    html! {
        form.filters method="get" action="/console/leads" role="search" aria-label="Filter leads" {
            div.wide {
                label for="q" { "Search" }
                input #q type="search" name="q" value=[filter.q.as_deref()] placeholder="Name, phone, email or external id";
            }
            details.more-filters open[narrowed] {
            summary { "More filters" }
            div.filter-grid {
            div {
                label for="profile" { "Campaign" }
                select #profile name="profile" {
                    option value="" { "Any" }
                    @for p in profiles {
                        option value=(p.id) selected[filter.profile.as_deref() == Some(p.id.as_str())] { (p.label) }
                    }
                }
            }
            div {
                label for="state" { "State" }
                select #state name="state" {
                    option value="" { "Any" }
                    @for s in STATES {
                        option value=(s.as_str()) selected[filter.state == Some(s)] { (s.as_str()) }
                    }
                }
            }
            div {
                label for="stoppedReason" { "Stop reason" }
                select #stoppedReason name="stoppedReason" {
                    option value="" { "Any" }
                    @for r in STOP_REASONS {
                        option value=(r.as_str()) selected[filter.stopped_reason == Some(r)] { (r.words()) }
                    }
                }
            }
            (yes_no(Flag::Replied, "Replied", "Yes", "No"))
            (yes_no(Flag::Hot, "Hot", "Yes", "No"))
            (yes_no(Flag::Qualified, "Qualified", "Yes", "No"))
            (yes_no(Flag::HandedOff, "Handed off", "Yes", "No"))
            (yes_no(Flag::AiOn, "Assistant", "On", "Off"))
            (yes_no(Flag::Unsubscribed, "Unsubscribed", "Yes", "No"))
            div {
                label for="tag" { "Tag" }
                input #tag type="text" name="tag" value=[filter.tag.as_deref()];
            }
            div {
                label for="sort" { "Sort" }
                select #sort name="sort" {
                    option value="activity" selected[filter.sort == Sort::Activity] { "Last activity" }
                    option value="created" selected[filter.sort == Sort::Created] { "Created" }
                }
            }
            }
            }
            div { button type="submit" { "Filter" } }
        }
    }
}

/// `GET /console/leads.csv`: the filtered set as CSV, written page by page, each page
/// from its own snapshot, so a large export holds neither memory nor a snapshot. The
/// lead's fields, then each channel's subscription and the DNC list, then a column
/// `additionalInfo.<key>` for each key the set uses (at most [`EXPORT_INFO_KEYS`]),
/// found by a first pass over the set before the header is written.
pub fn export(state: &AppState, visitor: &Visitor, query: &str) -> Result<Response<Body>> {
    let (filter, _) = parse(query)?;
    let org = visitor.org().to_string();
    let store = state.store.clone();
    let (tx, rx) =
        tokio::sync::mpsc::channel::<std::result::Result<Frame<Bytes>, std::io::Error>>(4);
    tokio::spawn(async move {
        let mut keys = Vec::new();
        let mut after: Option<After> = None;
        loop {
            match key_batch(&store, &org, &filter, after.as_ref(), &mut keys) {
                Ok(Some(next)) if keys.len() < EXPORT_INFO_KEYS => after = Some(next),
                Ok(_) => break,
                Err(e) => {
                    tracing::error!(error = %e.to_string_for_logs(), "lead export stopped");
                    let _ = tx.send(Err(std::io::Error::other("export failed"))).await;
                    return;
                }
            }
            tokio::task::yield_now().await;
        }
        let mut header = "id,firstName,lastName,phone,email,customerProfile,externalLeadId,state,hot,qualified,replied,assistantOn,tags,createdAt,lastActivityAt,smsSubscribed,voiceSubscribed,emailSubscribed,dnc".to_string();
        for key in &keys {
            header.push(',');
            header.push_str(&csv_field(&format!("additionalInfo.{key}"), Column::Other));
        }
        header.push_str("\r\n");
        if tx.send(Ok(Frame::data(Bytes::from(header)))).await.is_err() {
            return;
        }
        let mut after: Option<After> = None;
        loop {
            let batch = csv_batch(&store, &org, &filter, after.as_ref(), &keys);
            let (text, next) = match batch {
                Ok(found) => found,
                Err(e) => {
                    tracing::error!(error = %e.to_string_for_logs(), "lead export stopped");
                    let _ = tx.send(Err(std::io::Error::other("export failed"))).await;
                    return;
                }
            };
            if tx.send(Ok(Frame::data(Bytes::from(text)))).await.is_err() {
                return;
            }
            match next {
                Some(next) => after = Some(next),
                None => return,
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Ok(respond::csv_download(
        StreamBody::new(stream).boxed(),
        "leads.csv",
    ))
}

/// One page of the export's first pass: the `additionalInfo` keys its leads use added
/// to `keys` (in the order found, at most [`EXPORT_INFO_KEYS`]); the next page.
fn key_batch(
    store: &crate::store::Store,
    org: &str,
    filter: &LeadFilter,
    after: Option<&After>,
    keys: &mut Vec<String>,
) -> Result<Option<After>> {
    let read = store.read()?;
    let page = search::search(&read, org, filter, CSV_BATCH, after)?;
    for found in &page.leads {
        let Some(lead) = read.lead(org, &found.id)? else {
            continue;
        };
        if let serde_json::Value::Object(info) = &lead.additional_info.0 {
            for key in info.keys() {
                if keys.len() == EXPORT_INFO_KEYS {
                    return Ok(None);
                }
                if !keys.contains(key) {
                    keys.push(key.clone());
                }
            }
        }
    }
    Ok(page.next)
}

fn csv_batch(
    store: &crate::store::Store,
    org: &str,
    filter: &LeadFilter,
    after: Option<&After>,
    keys: &[String],
) -> Result<(String, Option<After>)> {
    let read = store.read()?;
    let page = search::search(&read, org, filter, CSV_BATCH, after)?;
    let mut out = String::new();
    for found in &page.leads {
        let Some(lead) = read.lead(org, &found.id)? else {
            continue;
        };
        let engagement = read.engagement(org, &found.id)?;
        let tags: Vec<&str> = lead.tags.iter().map(|t| t.id.as_str()).collect();
        let on_dnc = !lead.phone.is_empty() && read.dnc_contains(org, &lead.phone)?;
        let subscribed = &lead.subscriptions;
        let mut fields = vec![
            lead.id.clone(),
            lead.first_name.clone(),
            lead.last_name.clone(),
            lead.phone.clone(),
            lead.email.clone(),
            lead.customer_profile.clone(),
            lead.external_lead_id.clone(),
            state_words(engagement.as_ref()),
            lead.is_hot.to_string(),
            lead.is_qualified.to_string(),
            (lead.has_replied || lead.has_replied_email).to_string(),
            lead.is_ai_on.to_string(),
            tags.join(";"),
            crate::time::format(lead.created_at),
            crate::time::format(lead.last_activity_at),
            (!subscribed.sms_unsubscribed).to_string(),
            (!subscribed.voice_unsubscribed).to_string(),
            (!subscribed.email_unsubscribed).to_string(),
            on_dnc.to_string(),
        ];
        for key in keys {
            fields.push(match lead.additional_info.0.get(key) {
                None | Some(serde_json::Value::Null) => String::new(),
                Some(serde_json::Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
            });
        }
        let line: Vec<String> = fields
            .iter()
            .enumerate()
            .map(|(i, f)| csv_field(f, if i == 3 { Column::Phone } else { Column::Other }))
            .collect();
        out.push_str(&line.join(","));
        out.push_str("\r\n");
    }
    Ok((out, page.next))
}

/// One CSV field (RFC 4180), quoted when needed; a value a spreadsheet would run as a
/// formula is neutralized (`csv_cell::neutralize`: a leading `'`, but for an E.164
/// phone in the phone column).
fn csv_field(value: &str, column: Column) -> String {
    let value = neutralize(value, column).into_owned();
    if value.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_and_formulas_defused() {
        let other = Column::Other;
        assert_eq!(csv_field("plain", other), "plain");
        assert_eq!(csv_field("a,b", other), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\"", other), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("=SUM(A1)", other), "'=SUM(A1)");
        assert_eq!(csv_field("+15125551099", Column::Phone), "+15125551099");
        assert_eq!(
            csv_field("+cmd|' /C calc'!A0", other),
            "'+cmd|' /C calc'!A0"
        );
        assert_eq!(csv_field("+15125551099", other), "'+15125551099");
    }

    #[test]
    fn the_page_start_travels_beside_the_filter() {
        let key = CursorKey::new([7u8; 32]);
        let (filter, token) = parse("hot=true&q=ana").unwrap();
        assert_eq!(filter.flag(Flag::Hot), Some(true));
        assert_eq!(token, None);
        let after = (12, "lead-1".to_string());
        let again = query_string(&key, "org", &filter, Some(&after)).unwrap();
        let (same, token) = parse(&again).unwrap();
        assert_eq!(same, filter);
        let token = token.unwrap();
        assert_eq!(open_page(&key, "org", &filter, &token), Ok(after));
    }

    #[test]
    fn a_page_token_changed_or_for_another_search_is_refused() {
        let key = CursorKey::new([7u8; 32]);
        let (filter, _) = parse("hot=true").unwrap();
        let link = query_string(&key, "org", &filter, Some(&(12, "lead-1".into()))).unwrap();
        let (_, token) = parse(&link).unwrap();
        let token = token.unwrap();
        let mut tampered = token.clone();
        let last = if tampered.ends_with('A') { 'B' } else { 'A' };
        tampered.pop();
        tampered.push(last);
        assert!(open_page(&key, "org", &filter, &tampered).is_err());
        assert!(open_page(&key, "other", &filter, &token).is_err());
        let (cold, _) = parse("hot=false").unwrap();
        assert!(open_page(&key, "org", &cold, &token).is_err());
        // An `after=<time>:<id>` of old is no parameter any more.
        assert!(parse("after=12:lead-1").is_err());
    }
}
