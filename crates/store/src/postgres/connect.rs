//! Connecting: parsing the connection string, describing the server in errors (never the password), and
//! turning a failed connection into a message that says what to do.
//!
//! Connections are plain TCP (or a Unix socket) without TLS: enough for a server on the same machine or a
//! trusted network, which is what agency's distributed mode needs today. A server that insists on TLS
//! refuses the connection, and the error says so.

use std::error::Error as _;
use std::io::{self, Write as _};
use std::str::FromStr;
use std::time::{Duration, Instant};

use postgres::config::Host;
use postgres::error::SqlState;
use postgres::{Client, Config, NoTls};

use crate::error::{Result, StoreError};

/// How long connecting may take before it fails (unless the connection string sets `connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a handle that lost its connection keeps trying to connect again before it gives up, unless
/// [`RECONNECT_VAR`] says otherwise: long enough for a server restart or a short outage.
pub const DEFAULT_RECONNECT: Duration = Duration::from_secs(60);

/// The environment variable that sets how many seconds a handle tries to reconnect (0: not at all).
pub const RECONNECT_VAR: &str = "AGENCY_DB_RECONNECT_SECONDS";

/// The first wait between reconnection attempts; each failed attempt doubles it, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Where and how to connect, and which schema holds the blackboard.
// No Debug: the config holds the password.
#[derive(Clone)]
pub struct Settings {
    config: Config,
    schema: String,
    target: String,
    reconnect: Duration,
}

impl Settings {
    /// Parses a connection string (`postgres://user:pass@host:5432/db` or `host=... user=... dbname=...`)
    /// and checks the schema name.
    pub fn parse(url: &str, schema: &str) -> Result<Self> {
        let mut config = Config::from_str(url).map_err(|e| {
            StoreError::Invalid(format!(
                "not a PostgreSQL connection string ({e}); expected `postgres://USER:PASSWORD@HOST:PORT/DBNAME` \
                 or `host=HOST user=USER password=PASSWORD dbname=DBNAME`"
            ))
        })?;
        check_schema_name(schema)?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("agency");
        }
        let target = describe(&config);
        Ok(Settings {
            config,
            schema: schema.to_string(),
            target,
            reconnect: reconnect_limit_from_env()?,
        })
    }

    /// Sets how long [`reconnect`](Self::reconnect) keeps trying.
    pub fn set_reconnect_limit(&mut self, limit: Duration) {
        self.reconnect = limit;
    }

    /// The schema holding the blackboard's tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The server, user and database, for messages: `user@host:port/dbname`, never the password.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Opens a connection whose `search_path` is the blackboard's schema (which need not exist yet: the
    /// migration creates it).
    pub fn connect(&self) -> Result<Client> {
        let mut client = self
            .config
            .connect(NoTls)
            .map_err(|e| connect_error(&self.target, e))?;
        client.batch_execute(&format!("SET search_path TO \"{}\"", self.schema))?;
        Ok(client)
    }

    /// Connects again after the connection was lost (`lost` says how): a server restarting or briefly
    /// unreachable is waited for, with a doubling backoff, for up to the reconnect limit; a refusal that
    /// waiting cannot cure (a wrong password, a dropped database) fails at once. Says on stderr that the
    /// connection was lost and when it is back, so an operator sees the pause and its cause.
    pub fn reconnect(&self, lost: &str) -> Result<Client> {
        let started = Instant::now();
        let mut backoff = FIRST_BACKOFF;
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let error = match self.connect() {
                Ok(client) => {
                    let _ = writeln!(
                        io::stderr(),
                        "agency: reconnected to PostgreSQL at {} after {:.1} s ({attempts} attempt{}); the \
                         connection was lost: {lost}",
                        self.target,
                        started.elapsed().as_secs_f64(),
                        if attempts == 1 { "" } else { "s" },
                    );
                    return Ok(client);
                }
                Err(error) => error,
            };
            let waited = started.elapsed();
            if !is_transient(&error) || waited + backoff > self.reconnect {
                return Err(if is_transient(&error) {
                    StoreError::Unavailable {
                        target: self.target.clone(),
                        seconds: self.reconnect.as_secs_f64(),
                        lost: lost.to_string(),
                        source: Box::new(error),
                    }
                } else {
                    error
                });
            }
            if attempts == 1 {
                let _ = writeln!(
                    io::stderr(),
                    "agency: lost the connection to PostgreSQL at {} ({lost}); reconnecting for up to {:.1} \
                     s ({RECONNECT_VAR})",
                    self.target,
                    self.reconnect.as_secs_f64(),
                );
            }
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}

/// The reconnect limit [`RECONNECT_VAR`] sets, or [`DEFAULT_RECONNECT`].
fn reconnect_limit_from_env() -> Result<Duration> {
    match std::env::var(RECONNECT_VAR) {
        Err(_) => Ok(DEFAULT_RECONNECT),
        Ok(text) => text.trim().parse::<u64>().map(Duration::from_secs).map_err(|_| {
            StoreError::Invalid(format!(
                "{RECONNECT_VAR} is `{text}`; expected a whole number of seconds (0 turns reconnecting off)"
            ))
        }),
    }
}

/// Whether a failed connection attempt may succeed if tried again in a moment: the server not listening
/// (restarting), starting up or shutting down, or the network not answering. A refused login or a missing
/// database is not.
fn is_transient(error: &StoreError) -> bool {
    let StoreError::Connect { source, .. } = error else {
        return false;
    };
    source
        .downcast_ref::<postgres::Error>()
        .is_some_and(is_connection_loss)
}

/// What `error` says happened, with the server's own words when it sent any (`terminating connection due
/// to administrator command`), which the error's plain text (`db error`) leaves out.
pub(crate) fn cause_of(error: &StoreError) -> String {
    let StoreError::Database(source) = error else {
        return error.to_string();
    };
    match source.downcast_ref::<postgres::Error>() {
        Some(pg) => match pg.as_db_error() {
            Some(db) => format!("{}: {} ({})", db.severity(), db.message(), db.code().code()),
            None => match pg.source() {
                Some(inner) => format!("{pg}: {inner}"),
                None => pg.to_string(),
            },
        },
        None => error.to_string(),
    }
}

/// Whether `error` says the connection (or the server behind it) went away, rather than that a statement
/// failed: the session was terminated (`pg_terminate_backend`, a shutdown), the server is not accepting
/// connections yet, or the socket closed or was refused.
pub(crate) fn is_connection_loss(error: &postgres::Error) -> bool {
    if error.is_closed() {
        return true;
    }
    if let Some(code) = error.code() {
        return [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
            SqlState::CONNECTION_FAILURE,
            SqlState::CONNECTION_EXCEPTION,
            SqlState::SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION,
            SqlState::TOO_MANY_CONNECTIONS,
        ]
        .contains(code);
    }
    matches!(
        io_kind(error),
        Some(
            io::ErrorKind::ConnectionRefused
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::NotConnected
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::UnexpectedEof
                | io::ErrorKind::TimedOut
        )
    ) || error.to_string().contains("timeout")
}

/// Schema names are spliced into SQL (`SET search_path`, `CREATE SCHEMA`), so only plain lower-case
/// identifiers are accepted.
fn check_schema_name(schema: &str) -> Result<()> {
    let mut chars = schema.chars();
    let plain = chars.next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && schema.len() <= 63;
    if plain {
        Ok(())
    } else {
        Err(StoreError::Invalid(format!(
            "`{schema}` is not a usable schema name: use lower-case letters, digits and `_` (at most 63, not \
             starting with a digit)"
        )))
    }
}

fn describe(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        Some(Host::Unix(path)) => path.display().to_string(),
        None => String::from("localhost"),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or("(default user)");
    let dbname = config.get_dbname().unwrap_or(user);
    format!("{user}@{host}:{port}/{dbname}")
}

/// A failed connection as an error that names the server and says what to try.
fn connect_error(target: &str, error: postgres::Error) -> StoreError {
    let hint = match error.code() {
        Some(code)
            if *code == SqlState::INVALID_PASSWORD
                || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION =>
        {
            "check the user and password in the connection string"
        }
        Some(code)
            if *code == SqlState::CANNOT_CONNECT_NOW
                || *code == SqlState::ADMIN_SHUTDOWN
                || *code == SqlState::CRASH_SHUTDOWN =>
        {
            "the server is starting up, shutting down or restarting: wait until it accepts connections \
             (`pg_isready`), then retry"
        }
        Some(code) if *code == SqlState::INVALID_CATALOG_NAME => {
            "create the database first (`createdb NAME`) or name an existing one with `dbname`"
        }
        _ if io_kind(&error) == Some(io::ErrorKind::ConnectionRefused) => {
            "nothing is listening there: is PostgreSQL running? Start it (on Debian: `pg_ctlcluster <version> \
             main start`; with systemd: `systemctl start postgresql`) or fix the host and port"
        }
        _ if io_kind(&error) == Some(io::ErrorKind::TimedOut) || error.to_string().contains("timeout") => {
            "the server did not answer in time: check the host, the port and any firewall between"
        }
        _ if error.to_string().contains("TLS") || error.to_string().contains("ssl") => {
            "agency connects without TLS (fine on loopback or a trusted network); drop `sslmode=require` or \
             allow non-TLS connections from this host in pg_hba.conf"
        }
        _ => {
            "check the connection string, and that the server accepts TCP connections from this host (pg_hba.conf)"
        }
    };
    StoreError::Connect {
        target: target.to_string(),
        hint,
        source: Box::new(error),
    }
}

/// The I/O error kind somewhere in the error's chain of causes, if any.
fn io_kind(error: &postgres::Error) -> Option<io::ErrorKind> {
    let mut cause = error.source();
    while let Some(inner) = cause {
        if let Some(io) = inner.downcast_ref::<io::Error>() {
            return Some(io.kind());
        }
        cause = inner.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_name_user_host_port_and_database_but_never_the_password() {
        let url = "postgres://ann:s3cret@db.example:6543/agency";
        let settings = Settings::parse(url, "agency").unwrap();
        assert_eq!(settings.target(), "ann@db.example:6543/agency");
        let kv = Settings::parse(
            "host=127.0.0.1 user=postgres password=s3cret dbname=postgres",
            "x",
        )
        .unwrap();
        assert_eq!(kv.target(), "postgres@127.0.0.1:5432/postgres");
    }

    #[test]
    fn schema_names_must_be_plain_identifiers() {
        for good in ["agency", "agency_test_01", "_x"] {
            assert!(check_schema_name(good).is_ok(), "{good}");
        }
        for bad in ["", "Agency", "9lives", "a\"; DROP TABLE runs; --", "a-b"] {
            assert!(check_schema_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reconnecting_to_a_server_that_stays_away_gives_up_at_the_limit_naming_the_cause() {
        let mut settings = Settings::parse(
            "host=127.0.0.1 port=1 user=agency password=pw dbname=agency",
            "agency",
        )
        .unwrap();
        settings.set_reconnect_limit(Duration::from_millis(700));
        let started = Instant::now();
        let error = settings.reconnect("the server restarted").err().unwrap();
        let waited = started.elapsed();
        // Backoff 100 + 200 ms, then the next wait (400 ms) would pass the limit.
        assert!(waited >= Duration::from_millis(300), "{waited:?}");
        assert!(waited < Duration::from_secs(5), "{waited:?}");
        let message = error.to_string();
        assert!(matches!(error, StoreError::Unavailable { .. }), "{message}");
        assert!(message.contains("agency@127.0.0.1:1/agency"), "{message}");
        assert!(message.contains("the server restarted"), "{message}");
        assert!(!message.contains("pg_hba"), "{message}");
        assert!(!message.contains("pw"), "{message}");
    }

    #[test]
    fn a_refused_connection_names_the_server_and_how_to_start_postgres() {
        // Port 1 on loopback: nothing listens there.
        let settings = Settings::parse(
            "host=127.0.0.1 port=1 user=agency password=pw dbname=agency",
            "agency",
        )
        .unwrap();
        let message = settings.connect().err().unwrap().to_string();
        assert!(message.contains("agency@127.0.0.1:1/agency"), "{message}");
        assert!(message.contains("is PostgreSQL running?"), "{message}");
        assert!(!message.contains("pw"), "{message}");
    }
}
