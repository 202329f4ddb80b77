//! The console's answers: HTML pages, redirects, error pages, and the security headers
//! every console response carries.

use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_TYPE, LOCATION};
use hyper::{Response, StatusCode};
use maud::{html, Markup};

use super::layout;
use super::session::Visitor;
use crate::api::response::{full, Body};
use crate::error::Error;

/// The Content-Security-Policy of every console answer: nothing inline, nothing from
/// elsewhere (scripts, styles, media and forms are this server's own).
pub const CSP: &str =
    "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// Adds the security headers to a console answer; a page with data is never stored.
pub fn secured(mut response: Response<Body>) -> Response<Body> {
    let headers = response.headers_mut();
    headers.insert("content-security-policy", HeaderValue::from_static(CSP));
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert("referrer-policy", HeaderValue::from_static("same-origin"));
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    if !headers.contains_key(CACHE_CONTROL) {
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// An HTML page.
pub fn html(status: StatusCode, markup: Markup) -> Response<Body> {
    let mut response = Response::new(full(markup.into_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

/// `303 See Other` to a path of this server (after a POST, the browser GETs it).
pub fn redirect(to: &str) -> Response<Body> {
    let mut response = Response::new(full(""));
    *response.status_mut() = StatusCode::SEE_OTHER;
    if let Ok(value) = HeaderValue::from_str(to) {
        response.headers_mut().insert(LOCATION, value);
    }
    response
}

/// 403: the person's role does not allow this.
pub fn forbidden(visitor: &Visitor) -> Response<Body> {
    error_page(&Error::Forbidden, Some(visitor))
}

/// The page of an error: its status, and words a person understands.
pub fn error_page(e: &Error, visitor: Option<&Visitor>) -> Response<Body> {
    if let Error::Internal(cause) = e {
        tracing::error!(%cause, "internal error in the console");
    }
    let (title, text) = match e {
        Error::Forbidden | Error::Unauthorized => (
            "Not allowed",
            "You do not have permission to do this. Ask an admin of your organization if you need it.".to_string(),
        ),
        Error::NotFound(_) => ("Not found", "There is nothing here.".to_string()),
        Error::MethodNotAllowed(_) => ("Not allowed", "This address does not take that request.".to_string()),
        Error::Internal(_) | Error::Unavailable => (
            "Something went wrong",
            "The server could not do this. Try again; if it keeps failing, the server's log says why.".to_string(),
        ),
        other => ("Cannot do this", other.to_string()),
    };
    let markup = layout::page(
        title,
        visitor,
        html! {
            h1 { (title) }
            p.notice { (text) }
            p { a href="/console/inbox" { "Back to the inbox" } }
        },
    );
    let mut response = html(e.status(), markup);
    if let Error::MethodNotAllowed(allowed) = e {
        if let Ok(value) = HeaderValue::from_str(&allowed.header()) {
            response.headers_mut().insert(hyper::header::ALLOW, value);
        }
    }
    response
}

/// `body` as a CSV file the browser downloads as `filename` (a name of ours, never a
/// visitor's text).
pub fn csv_download(body: Body, filename: &'static str) -> Response<Body> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{filename}\"")) {
        headers.insert(CONTENT_DISPOSITION, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_csv_download_names_its_type_and_file() {
        let response = csv_download(full("a,b\n"), "leads.csv");
        let headers = response.headers();
        assert_eq!(headers[CONTENT_TYPE], "text/csv; charset=utf-8");
        assert_eq!(
            headers[CONTENT_DISPOSITION],
            "attachment; filename=\"leads.csv\""
        );
    }
}
