//! The driver lease on PostgreSQL: a session-level advisory lock on a connection of its own, held for as
//! long as the lease. The server lets go of it when that connection ends — the lease dropped, or the
//! runner's process gone (its socket closes with it). The connection's `application_name` names the holder,
//! so the runner kept out can say who is driving.

use std::sync::{Mutex, PoisonError};

use agency_core::RunId;
use postgres::Client;

use super::connect::Settings;
use super::off_async_runtime;
use crate::driver::{DriverLease, describe_holder};
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
        let mut client = settings.connect()?;
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
        Ok(DriverLease::new(Held(Mutex::new(Some(client)))))
    })
}

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

/// The connection holding the lock. Dropped off any async runtime: the client shuts down a runtime of its
/// own, which tokio refuses to do on a thread inside one.
struct Held(Mutex<Option<Client>>);

impl Drop for Held {
    fn drop(&mut self) {
        let client = self.0.get_mut().unwrap_or_else(PoisonError::into_inner).take();
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
