//! Webhook endpoint administration: registering and deleting receivers, listing an
//! endpoint's deliveries, and retrying one by hand. The outbox itself (`emit`) and the
//! delivery of what it holds live in `crate::webhooks`.

use serde_json::{Map, Value};

use crate::domain::records::listing;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::rows::{DeliveryRecord, DeliveryState, EndpointRecord};
use crate::store::Reader;
use crate::store::{ReadTx, WriteTx};
use crate::time::{now_micros, Micros};
use crate::webhooks::{signing, WebhookEvent};

/// Registers an endpoint from `{"url", "events"?}`.
pub fn create_endpoint(
    tx: &mut WriteTx,
    caller: &Caller,
    body: Map<String, Value>,
) -> Result<EndpointRecord> {
    let mut url = None;
    let mut events = Vec::new();
    for (name, value) in body {
        match (name.as_str(), value) {
            ("url", Value::String(s)) if is_valid_url(&s) => url = Some(s),
            ("url", _) => return Err(Error::invalid_field("url")),
            ("events", Value::Null) => {}
            ("events", Value::Array(items)) => {
                for item in items {
                    match item.as_str().and_then(WebhookEvent::parse) {
                        Some(e) => {
                            if !events.iter().any(|x| x == e.as_str()) {
                                events.push(e.as_str().to_string());
                            }
                        }
                        None => return Err(Error::invalid_field("events")),
                    }
                }
            }
            ("events", _) => return Err(Error::invalid_field("events")),
            (other, _) => return Err(Error::unknown_field(other)),
        }
    }
    let url = url.ok_or_else(|| Error::BadRequest("Missing required field: url".into()))?;
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
}
