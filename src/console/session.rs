//! Who is asking: the session cookie read into a [`Visitor`], and the checks every
//! POST passes (the session's CSRF token and this server as its origin).
//!
//! The cookie holds a random token; the store keeps only its SHA-256, with the
//! session's expiry (`domain::people::sessions`). A session seen again after a minute
//! has its idle time renewed (one small write, at most once a minute per session, which
//! the page does not wait for).

use hyper::header::{HeaderMap, COOKIE, HOST};
use hyper::http::request::Parts;

use super::form::Form;
use crate::api::AppState;
use crate::domain::people::sessions::{self, COOKIE as SESSION_COOKIE};
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::rows::{Person, Role, Scope, SessionRecord, UserRecord};
use crate::time::now_micros;

/// A signed-in person and their session.
#[derive(Debug, Clone)]
pub struct Visitor {
    pub user: UserRecord,
    pub session: SessionRecord,
    pub token_hash: [u8; 32],
    /// Why replication to object storage is paused (a full spool), for an admin's
    /// banner on every page; `None` otherwise.
    pub replica_paused: Option<String>,
}

impl Visitor {
    /// The person as events record them.
    pub fn person(&self) -> Person {
        Person {
            user_id: self.user.id.clone(),
            name: self.user.name.clone(),
        }
    }

    /// The domain's caller for this person: their organization, with the rights of
    /// their role (viewer: read, agent: write, admin: admin).
    pub fn caller(&self) -> Caller {
        Caller {
            org_id: self.user.org_id.clone(),
            key_id: self.user.id.clone(),
            scope: match self.user.role {
                Role::Viewer => Scope::Read,
                Role::Agent => Scope::Write,
                Role::Admin => Scope::Admin,
            },
        }
    }

    pub fn org(&self) -> &str {
        &self.user.org_id
    }
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
}

/// The signed-in visitor of a request; `None` without a valid, unexpired session.
pub async fn visitor(state: &AppState, headers: &HeaderMap) -> Result<Option<Visitor>> {
    let Some(token) = cookie(headers, SESSION_COOKIE) else {
        return Ok(None);
    };
    let now = now_micros();
    let signed = sessions::authenticate(&state.store.read()?, token, now)?;
    let Some(signed) = signed else {
        return Ok(None);
    };
    if sessions::needs_touch(&signed.session, now) {
        let hash = signed.token_hash;
        state
            .store
            .write(move |tx| sessions::touch(tx, &hash))
            .await?;
    }
    let replica_paused = state
        .replica
        .as_ref()
        .filter(|_| signed.user.role.at_least(crate::store::rows::Role::Admin))
        .and_then(|replica| replica.text().paused);
    Ok(Some(Visitor {
        user: signed.user,
        session: signed.session,
        token_hash: signed.token_hash,
        replica_paused,
    }))
}

/// A POST must come from this server's own pages: its `Origin` is this server (or,
/// without one, `Sec-Fetch-Site: same-origin`). Otherwise 403 and nothing changes.
pub fn check_origin(parts: &Parts) -> Result<()> {
    let headers = &parts.headers;
    let host = headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| parts.uri.authority().map(|a| a.as_str()));
    match headers.get("origin").and_then(|o| o.to_str().ok()) {
        Some(origin) => match host {
            Some(host) if origin.eq_ignore_ascii_case(&format!("https://{host}")) => Ok(()),
            _ => Err(Error::Forbidden),
        },
        None => match headers.get("sec-fetch-site").and_then(|s| s.to_str().ok()) {
            Some("same-origin") => Ok(()),
            _ => Err(Error::Forbidden),
        },
    }
}

/// A signed-in POST: this server's origin, and the session's CSRF token in the form's
/// `csrf` field (or, from a script, the `x-csrf-token` header).
pub fn check_post(visitor: &Visitor, parts: &Parts, form: &Form) -> Result<()> {
    check_origin(parts)?;
    let given = form
        .get("csrf")
        .or_else(|| {
            parts
                .headers
                .get("x-csrf-token")
                .and_then(|v| v.to_str().ok())
        })
        .unwrap_or_default();
    if constant_time_eq(given.as_bytes(), visitor.session.csrf.as_bytes()) {
        Ok(())
    } else {
        Err(Error::Forbidden)
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.append(
            COOKIE,
            "a=1; __Host-engaged_session=tok; b=2".parse().unwrap(),
        );
        assert_eq!(cookie(&headers, "__Host-engaged_session"), Some("tok"));
        assert_eq!(cookie(&headers, "c"), None);
    }

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut builder = hyper::Request::post("https://localhost:8443/console/logout");
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        builder.body(()).unwrap().into_parts().0
    }

    #[test]
    fn only_this_servers_origin_may_post() {
        let host = ("host", "localhost:8443");
        assert!(check_origin(&parts(&[host, ("origin", "https://localhost:8443")])).is_ok());
        assert!(check_origin(&parts(&[host, ("origin", "https://evil.example")])).is_err());
        assert!(check_origin(&parts(&[host, ("origin", "http://localhost:8443")])).is_err());
        assert!(check_origin(&parts(&[host, ("sec-fetch-site", "same-origin")])).is_ok());
        assert!(check_origin(&parts(&[host, ("sec-fetch-site", "cross-site")])).is_err());
        assert!(check_origin(&parts(&[host])).is_err());
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
