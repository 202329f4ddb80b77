//! Webhook endpoint administration: registering and deleting receivers, listing an
//! endpoint's deliveries, and retrying one by hand. The outbox itself (`emit`) and the
//! delivery of what it holds live in `crate::webhooks`.

use serde_json::{Map, Value};

use crate::domain::records::listing;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::outbound_address::OutboundPolicy;
use crate::store::rows::{DeliveryRecord, DeliveryState, EndpointRecord};
use crate::store::Reader;
use crate::store::{ReadTx, WriteTx};
use crate::time::{now_micros, Micros};
use crate::webhooks::{signing, WebhookEvent};

/// A new endpoint: where its deliveries go and which events it takes (none: every
/// event), each named once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointInput {
    pub url: String,
    pub events: Vec<WebhookEvent>,
}

impl EndpointInput {
    /// An endpoint at `url` for `events` (by their wire names; none: every event).
    pub fn new<'a>(url: &str, events: impl IntoIterator<Item = &'a str>) -> Result<Self> {
        let mut input = EndpointInput {
            url: endpoint_url(url)?,
            events: Vec::new(),
        };
        for name in events {
            input.add_event(Some(name))?;
        }
        Ok(input)
    }

    /// `POST /v1/webhooks`' body: `{"url", "events"?}`, its members checked in order.
    pub fn from_json(body: &Map<String, Value>) -> Result<Self> {
        let mut url = None;
        let mut input = EndpointInput {
            url: String::new(),
            events: Vec::new(),
        };
        for (name, value) in body {
            match (name.as_str(), value) {
                ("url", Value::String(s)) => url = Some(endpoint_url(s)?),
                ("url", _) => return Err(Error::invalid_field("url")),
                ("events", Value::Null) => {}
                ("events", Value::Array(items)) => {
                    for item in items {
                        input.add_event(item.as_str())?;
                    }
                }
                ("events", _) => return Err(Error::invalid_field("events")),
                (other, _) => return Err(Error::unknown_field(other)),
            }
        }
        input.url = url.ok_or_else(|| Error::BadRequest("Missing required field: url".into()))?;
        Ok(input)
    }

    /// One more event by its wire name (named twice: once).
    fn add_event(&mut self, name: Option<&str>) -> Result<()> {
        let event = name
            .and_then(WebhookEvent::parse)
            .ok_or_else(|| Error::invalid_field("events"))?;
        if !self.events.contains(&event) {
            self.events.push(event);
        }
        Ok(())
    }
}

/// An endpoint's `url`: an absolute http(s) URL.
fn endpoint_url(url: &str) -> Result<String> {
    if is_valid_url(url) {
        Ok(url.to_string())
    } else {
        Err(Error::invalid_field("url"))
    }
}

/// Registers an endpoint, with a new signing secret (an endpoint's URL never changes,
/// so its secret is bound to it). A URL `policy` (`outbound_allow_private`) refuses is
/// a 400 naming `url`.
pub fn create_endpoint(
    tx: &mut WriteTx,
    caller: &Caller,
    input: EndpointInput,
    policy: OutboundPolicy,
) -> Result<EndpointRecord> {
    let EndpointInput { url, events } = input;
    policy.check_url("url", &url)?;
    let events = events.iter().map(|e| e.as_str().to_string()).collect();
    let endpoint = EndpointRecord {
        id: crate::ids::generate("wh"),
        org_id: caller.org_id.clone(),
        url,
        events,
        secret: signing::new_secret(),
        created_at: tx.tick(),
        disabled_at: None,
        disabled_reason: String::new(),
    };
    tx.put_webhook_endpoint(&endpoint)?;
    Ok(endpoint)
}

/// An absolute http(s) URL with a host.
pub fn is_valid_url(s: &str) -> bool {
    let Ok(uri) = s.parse::<hyper::Uri>() else {
        return false;
    };
    matches!(uri.scheme_str(), Some("http") | Some("https"))
        && uri.host().is_some_and(|h| !h.is_empty())
        && !s.chars().any(char::is_whitespace)
}

pub fn webhook_not_found() -> Error {
    Error::NotFound("Webhook not found".into())
}

pub fn delete_endpoint(tx: &mut WriteTx, caller: &Caller, id: &str) -> Result<()> {
    if tx.webhook_endpoint(&caller.org_id, id)?.is_none() {
        return Err(webhook_not_found());
    }
    tx.delete_webhook_endpoint(&caller.org_id, id)
}

/// Requeues a delivery now (a failed one, or a pending one sooner). Re-enables an
/// endpoint that a 410 had disabled: retrying by hand says the receiver is back.
pub fn retry_delivery(
    tx: &mut WriteTx,
    caller: &Caller,
    endpoint_id: &str,
    delivery_id: &str,
) -> Result<DeliveryRecord> {
    let mut endpoint = tx
        .webhook_endpoint(&caller.org_id, endpoint_id)?
        .ok_or_else(webhook_not_found)?;
    let mut delivery = tx
        .delivery(delivery_id)?
        .filter(|d| d.endpoint_id == endpoint_id && d.org_id == caller.org_id)
        .ok_or_else(|| Error::NotFound("Delivery not found".into()))?;
    if delivery.state == DeliveryState::Delivered {
        return Err(Error::Conflict("Delivery already succeeded".into()));
    }
    if endpoint.disabled_at.is_some() {
        endpoint.disabled_at = None;
        endpoint.disabled_reason.clear();
        tx.put_webhook_endpoint(&endpoint)?;
    }
    let previous_due = delivery.next_attempt_at;
    delivery.state = DeliveryState::Pending;
    delivery.cycle_attempts = 0;
    delivery.next_attempt_at = Some(now_micros());
    tx.put_delivery(&delivery, previous_due)?;
    Ok(delivery)
}

/// A page of an endpoint's deliveries, oldest first.
pub fn deliveries(
    read: &ReadTx,
    key: &crate::cursor::CursorKey,
    caller: &Caller,
    endpoint_id: &str,
    limit: usize,
    token: Option<&str>,
) -> Result<(Vec<DeliveryRecord>, Option<String>)> {
    read.webhook_endpoint(&caller.org_id, endpoint_id)?
        .ok_or_else(webhook_not_found)?;
    let query = ["deliveries", caller.org_id.as_str(), endpoint_id];
    let after = match token {
        Some(t) => Some(key.open::<(Micros, String)>(&query, t)?),
        None => None,
    };
    let position = |last: &DeliveryRecord| (last.created_at, last.id.clone());
    let cursor = listing::Cursor {
        key,
        query: &query,
        position,
    };
    let page = listing::paginate(
        limit,
        |visit| read.scan_deliveries(endpoint_id, after, visit),
        |_| true,
        cursor,
    )?;
    Ok((page.items, page.next_token))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_be_absolute_http_or_https() {
        assert!(is_valid_url("https://crm.example.com/hooks/engaged"));
        assert!(is_valid_url("http://127.0.0.1:9000/x"));
        for bad in [
            "",
            "ftp://example.com",
            "/relative",
            "example.com/x",
            "https://",
            "http://a b",
        ] {
            assert!(!is_valid_url(bad), "{bad}");
        }
    }

    fn body(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn an_endpoint_input_keeps_the_interface_messages() {
        let err = |v: Value| EndpointInput::from_json(&body(v)).unwrap_err().to_string();
        assert_eq!(
            err(serde_json::json!({"events": ["lead.handoff"]})),
            "Missing required field: url"
        );
        assert_eq!(
            err(serde_json::json!({"url": "ftp://x.example"})),
            "Invalid format for field: url"
        );
        assert_eq!(
            err(serde_json::json!({"url": 5})),
            "Invalid format for field: url"
        );
        assert_eq!(
            err(serde_json::json!({"url": "https://x.example", "events": ["nope"]})),
            "Invalid format for field: events"
        );
        assert_eq!(
            err(serde_json::json!({"url": "https://x.example", "secret": "s"})),
            "Unknown field: secret"
        );
        let refused = EndpointInput::new("https://x.example", ["nope"]).unwrap_err();
        assert_eq!(refused.refused_field(), Some("events"));
        let input = EndpointInput::from_json(&body(serde_json::json!({
            "url": "https://x.example/h", "events": ["lead.handoff", "lead.handoff"]
        })))
        .unwrap();
        assert_eq!(
            input.events,
            vec![WebhookEvent::parse("lead.handoff").unwrap()]
        );
        assert_eq!(
            input,
            EndpointInput::new("https://x.example/h", ["lead.handoff"]).unwrap()
        );
    }
}
