//! The driver lease on PostgreSQL: a session-level advisory lock on a connection of its own, held for as
//! long as the lease. The server lets go of it when that connection ends — the lease dropped, or the
//! runner's process gone (its socket closes with it). The connection's `application_name` names the holder,
//! so the runner kept out can say who is driving.

use std::io::Write as _;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use agency_core::RunId;
use postgres::Client;

use super::connect::{Settings, cause_of, is_connection_loss};
use super::off_async_runtime;
use crate::driver::{DriverLease, Held as HoldsLease, describe_holder};
use crate::error::{Result, StoreError};

/// The advisory lock key of `run`: the last 8 bytes of its id. A run id begins with the time it was made
/// and ends in random bits, so two runs share a key with negligible probability; the key is per database,
/// like the lock.
fn key(run: RunId) -> i64 {
    let bytes = run.0.as_bytes();
    let mut last = [0u8; 8];
    last.copy_from_slice(&bytes[8..]);
    i64::from_be_bytes(last)
}

/// Takes the lease of `run` on its own connection, or says who holds it.
pub(super) fn lock(settings: &Settings, run: RunId, holder: &str) -> Result<DriverLease> {
    off_async_runtime(|| {
        let client = take(settings.connect()?, run, holder)?;
        Ok(DriverLease::new(Held {
            client: Mutex::new(Some(client)),
            checked: Mutex::new(Instant::now()),
            settings: settings.clone(),
            run,
            holder: holder.to_string(),
        }))
    })
}

/// Takes `run`'s advisory lock on `client`, or says who holds it.
fn take(mut client: Client, run: RunId, holder: &str) -> Result<Client> {
    // PostgreSQL truncates application names at 63 bytes; the holder's name comes first.
    client.execute(
        "SELECT set_config('application_name', $1, false)",
        &[&describe_holder(holder)],
    )?;
    let locked: bool = client
        .query_one("SELECT pg_try_advisory_lock($1)", &[&key(run)])?
        .try_get(0)?;
    if !locked {
        let holder = holder_of(&mut client, key(run));
        close(client);
        return Err(StoreError::Driven {
            run: run.short(),
            holder,
        });
    }
    Ok(client)
}

/// How often [`Held::revalidate`] asks the server whether the lock's session is still there: a round
/// trip a second keeps a runner's turns cheap and notices a restart long before any lease runs out.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// The `application_name` of the session holding the advisory lock `key` in this database.
fn holder_of(client: &mut Client, key: i64) -> Option<String> {
    // A bigint key shows in pg_locks as its high half in `classid` and its low half in `objid`, both
    // unsigned (`oid`): the halves of the key's bits, whatever its sign.
    let bits = u64::from_ne_bytes(key.to_ne_bytes());
    let high = i64::from(u32::try_from(bits >> 32).unwrap_or(u32::MAX));
    let low = i64::from(u32::try_from(bits & 0xffff_ffff).unwrap_or(u32::MAX));
    let row = client
        .query_opt(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
             WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
             AND l.classid::bigint = $1 AND l.objid::bigint = $2 \
             AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            &[&high, &low],
        )
        .ok()??;
    row.try_get::<_, String>(0).ok().filter(|name| !name.is_empty())
}

/// The connection holding the lock, and what it takes to take the lock again on a new one. Dropped off
/// any async runtime: the client shuts down a runtime of its own, which tokio refuses to do on a thread
/// inside one.
struct Held {
    client: Mutex<Option<Client>>,
    checked: Mutex<Instant>,
    settings: Settings,
    run: RunId,
    holder: String,
}

impl HoldsLease for Held {
    fn revalidate(&self) -> Result<()> {
        {
            let mut checked = self.checked.lock().unwrap_or_else(PoisonError::into_inner);
            if checked.elapsed() < CHECK_EVERY {
                return Ok(());
            }
            *checked = Instant::now();
        }
        off_async_runtime(|| {
            let mut slot = self.client.lock().unwrap_or_else(PoisonError::into_inner);
            let lost = match slot.as_mut() {
                None => String::from("the lease's connection was closed"),
                Some(client) => match client.simple_query("SELECT 1") {
                    Ok(_) => return Ok(()),
                    Err(error) if client.is_closed() || is_connection_loss(&error) => {
                        cause_of(&StoreError::from(error))
                    }
                    Err(error) => return Err(error.into()),
                },
            };
            if let Some(old) = slot.take() {
                close(old);
            }
            let client = take(self.settings.reconnect(&lost)?, self.run, &self.holder)?;
            *slot = Some(client);
            let _ = writeln!(
                std::io::stderr(),
                "agency: run {} is still driven by {}: its driver lease was taken again after the \
                 connection to PostgreSQL was lost",
                self.run.short(),
                self.holder
            );
            Ok(())
        })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let client = self
            .client
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(client) = client {
            close(client);
        }
    }
}

fn close(client: Client) {
    let _ = off_async_runtime(move || {
        // Closing ends the session, which releases the lock; an error means the session is gone already.
        let _ = client.close();
        Ok(())
    });
}
