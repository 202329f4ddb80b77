//! The console's stylesheet, script and icon, embedded in the binary (no Node, no
//! bundler, no CDN: the console works on an air-gapped server).

use hyper::header::{HeaderMap, HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};

use crate::api::response::{full, Body};

const CSS: &str = include_str!("assets/console.css");
const JS: &str = include_str!("assets/console.js");
const FAVICON: &str = include_str!("assets/favicon.svg");

/// Where browsers look for a site's icon unasked; pages link it too. An SVG, served as
/// such (browsers read an icon by its type, not its name).
pub const FAVICON_PATH: &str = "/favicon.ico";

/// Where pages link them; the version in the name makes an upgrade fetch them anew.
pub const CSS_PATH: &str = concat!(
    "/console/assets/console-",
    env!("CARGO_PKG_VERSION"),
    ".css"
);
pub const JS_PATH: &str = concat!("/console/assets/console-", env!("CARGO_PKG_VERSION"), ".js");

/// `GET /console/assets/{name}`, and the icon (`name` [`FAVICON_PATH`]).
pub fn serve(name: &str, _headers: &HeaderMap) -> Response<Body> {
    let path = format!("/console/assets/{name}");
    let (body, kind) = if name == FAVICON_PATH {
        (FAVICON, "image/svg+xml")
    } else if path == CSS_PATH {
        (CSS, "text/css; charset=utf-8")
    } else if path == JS_PATH {
        (JS, "text/javascript; charset=utf-8")
    } else {
        let mut response = Response::new(full("Not found"));
        *response.status_mut() = StatusCode::NOT_FOUND;
        return response;
    };
    let mut response = Response::new(full(body));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=86400, immutable"),
    );
    response
}
