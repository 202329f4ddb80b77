//! Log capture: what the server logs on this thread, as text, for tests that check what
//! is (and is not) logged.

/// Collects what the server logs: install it on a current-thread runtime before starting
/// the server, which then runs every async task on this thread, and its writer thread
/// logs where the thread that opened the store does. Keep the guard alive while the
/// server runs.
#[derive(Clone, Default)]
pub struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Captured {
    /// Captures this thread's log at `level` and above until the guard is dropped.
    pub fn install(level: tracing::Level) -> (Captured, tracing::subscriber::DefaultGuard) {
        // tracing computes a line's interest with the *current thread's* subscriber
        // while only one subscriber is registered in the process: a test on another
        // thread would then cache "never" for lines this one wants. A second one, kept
        // for the whole run, makes it ask every registered subscriber instead.
        static KEEP: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();
        KEEP.get_or_init(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(level)
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        (captured, tracing::subscriber::set_default(subscriber))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner())).to_string()
    }

    /// The path and query of the last first-run setup link logged
    /// (`/console/setup?token=…`), as a browser opens it on the test server.
    pub fn setup_path(&self) -> Option<String> {
        let text = self.text();
        let at = text.rfind("/console/setup?token=")?;
        let rest = &text[at..];
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        Some(rest[..end].to_string())
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
