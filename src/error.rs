//! The one error type of the service.
//!
//! Every failure a request can meet, from a malformed body to a disk error, ends up as an
//! [`Error`]. Its `Display` text is the exact `message` of the `{"message": ...}` body the
//! interface prescribes, and [`Error::status`] its HTTP status, so handlers never build
//! error responses by hand. Internal failures keep their cause for the log but show the
//! client only `Internal Server Error`.

use hyper::{Method, StatusCode};

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// 400 with the given message.
    #[error("{0}")]
    BadRequest(String),
    /// 400 refusing one field of the input: the wire body is `message` alone, and a form
    /// shows it beside `field` (the input's name for it, e.g. `firstName`, `steps[2].text`).
    #[error("{message}")]
    InvalidField { field: String, message: String },
    #[error("Unauthorized")]
    Unauthorized,
    #[error("Forbidden")]
    Forbidden,
    /// 403 with words saying why (web chat's refused origin).
    #[error("{0}")]
    ForbiddenBecause(String),
    /// 404 with the given message.
    #[error("{0}")]
    NotFound(String),
    /// 405; the response's `Allow` header lists the path's methods.
    #[error("Method not allowed")]
    MethodNotAllowed(Allowed),
    /// 410 with the given message (an expired recording link).
    #[error("{0}")]
    Gone(String),
    /// 409 with the given message.
    #[error("{0}")]
    Conflict(String),
    #[error("Request body too large")]
    PayloadTooLarge,
    /// 413 with words saying what was too long (a web chat message).
    #[error("{0}")]
    TooLong(String),
    /// 408: the body did not arrive in time (the connection is closed after it).
    #[error("Request body not received in time")]
    RequestTimeout,
    /// 415 with the given message.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 429 with `Retry-After` in seconds.
    #[error("Too many requests")]
    RateLimited { retry_after_secs: u64 },
    /// 429 with `Retry-After` in seconds and words saying which bound it was (web
    /// chat's bounds, which a visitor reads in the widget).
    #[error("{message}")]
    Throttled {
        retry_after_secs: u64,
        message: String,
    },
    #[error("Service unavailable")]
    Unavailable,
    /// 424: a calendar's CalDAV server cannot be read, so no time is offered or booked;
    /// the message says why in the words an organization may read
    /// (`CalDavError::public_text`: "the CalDAV server could not be reached").
    #[error("Calendar unavailable: {0}")]
    CalendarUnavailable(String),
    /// 500; the cause is logged, never sent.
    #[error("Internal Server Error")]
    Internal(String),
}

/// The methods a path takes, for the `Allow` header of its 405: `HEAD` goes with `GET`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Allowed(u8);

impl Allowed {
    /// In the order of the header.
    const METHODS: [(Method, u8); 7] = [
        (Method::GET, 1),
        (Method::HEAD, 2),
        (Method::POST, 4),
        (Method::PUT, 8),
        (Method::PATCH, 16),
        (Method::DELETE, 32),
        (Method::OPTIONS, 64),
    ];

    /// `self` and `method` (and `HEAD` with `GET`).
    pub fn with(self, method: &Method) -> Allowed {
        let mut bits = self.0;
        for (m, bit) in Self::METHODS {
            if m == method {
                bits |= bit;
            }
        }
        if *method == Method::GET {
            bits |= 2;
        }
        Allowed(bits)
    }

    /// The `Allow` header's value: `GET, HEAD, POST`.
    pub fn header(&self) -> String {
        let names: Vec<&str> = Self::METHODS
            .iter()
            .filter(|(_, bit)| self.0 & bit != 0)
            .map(|(m, _)| m.as_str())
            .collect();
        names.join(", ")
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn status(&self) -> StatusCode {
        match self {
            Error::BadRequest(_) | Error::InvalidField { .. } => StatusCode::BAD_REQUEST,
            Error::Unauthorized => StatusCode::UNAUTHORIZED,
            Error::Forbidden | Error::ForbiddenBecause(_) => StatusCode::FORBIDDEN,
            Error::NotFound(_) => StatusCode::NOT_FOUND,
            Error::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            Error::Gone(_) => StatusCode::GONE,
            Error::Conflict(_) => StatusCode::CONFLICT,
            Error::PayloadTooLarge | Error::TooLong(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Error::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            Error::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Error::RateLimited { .. } | Error::Throttled { .. } => StatusCode::TOO_MANY_REQUESTS,
            Error::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            // A 4xx: the caller's calendar settings or its CalDAV server, not this server.
            Error::CalendarUnavailable(_) => StatusCode::FAILED_DEPENDENCY,
            Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// `Invalid format for field: <name>`, the interface's message for any malformed field.
    pub fn invalid_field(name: &str) -> Error {
        Error::field(name, format!("Invalid format for field: {name}"))
    }

    /// A 400 refusing the field `name` with `message`.
    pub fn field(name: &str, message: impl Into<String>) -> Error {
        Error::InvalidField {
            field: name.to_string(),
            message: message.into(),
        }
    }

    /// The field a 400 refuses, when it names one.
    pub fn refused_field(&self) -> Option<&str> {
        match self {
            Error::InvalidField { field, .. } => Some(field),
            _ => None,
        }
    }

    /// A 400: the input was refused (with or without naming a field).
    pub fn is_bad_request(&self) -> bool {
        matches!(self, Error::BadRequest(_) | Error::InvalidField { .. })
    }

    /// The 404 every lead-scoped operation but tag removal uses.
    pub fn lead_not_found(id: &str) -> Error {
        Error::NotFound(format!("Resource not found: Lead with id {id}"))
    }

    /// `Unknown field: <name>`: a body member the operation does not take.
    pub fn unknown_field(name: &str) -> Error {
        Error::BadRequest(format!("Unknown field: {name}"))
    }

    pub fn invalid_token() -> Error {
        Error::BadRequest("Invalid nextToken".to_string())
    }

    /// The cause of an error, including what the client never sees.
    pub fn to_string_for_logs(&self) -> String {
        match self {
            Error::Internal(cause) => cause.clone(),
            other => other.to_string(),
        }
    }
}

impl From<redb::Error> for Error {
    fn from(e: redb::Error) -> Self {
        Error::Internal(format!("storage: {e}"))
    }
}

macro_rules! redb_errors_are_internal {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Self {
                Error::from(redb::Error::from(e))
            }
        }
    )*};
}
redb_errors_are_internal!(
    redb::StorageError,
    redb::TableError,
    redb::TransactionError,
    redb::CommitError,
    redb::DatabaseError,
    redb::SetDurabilityError
);

impl From<postcard::Error> for Error {
    fn from(e: postcard::Error) -> Self {
        Error::Internal(format!("record decoding: {e}"))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Internal(format!("io: {e}"))
    }
}
