//! Connection attempts under load. sshd drops connections beyond `MaxStartups` (10
//! unauthenticated at once by default, then at random up to 100) right after accepting
//! them, so a controller opening hundreds at once sees resets and end-of-file during the
//! banner. Two things keep that from making hosts unreachable: at most
//! [`STARTUPS_PER_SERVER`] attempts at once from here to one server (its address and
//! port, by the same route), and attempts that were dropped anyway (another controller,
//! a smaller MaxStartups) tried again after an exponential back-off with jitter.
//!
//! How often: `retries` from the spec (Ansible's `reconnection_retries`, or OpenSSH's
//! ConnectionAttempts - 1). When neither is set, [`DEFAULT_RETRIES`] for dropped
//! handshakes only. A refused or timed-out TCP connection is tried again only when the
//! user asked for retries; a refused login or host key never is.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::connection::ConnectError;

/// Retries of a dropped handshake when nothing says how many: enough for 200 hosts
/// opened at once against one sshd with its default MaxStartups.
pub(super) const DEFAULT_RETRIES: u32 = 8;

/// Handshakes in flight to one server at once: sshd's default MaxStartups begins to drop
/// beyond 10 unauthenticated connections.
pub(super) const STARTUPS_PER_SERVER: usize = 10;

/// A place among the [`STARTUPS_PER_SERVER`] attempts to `server` (a route and an
/// address:port), held from the TCP connection (or channel, or proxy command) to the end
/// of the login.
pub(super) async fn startup_slot(server: String) -> OwnedSemaphorePermit {
    static SERVERS: OnceLock<Mutex<HashMap<String, Arc<Semaphore>>>> = OnceLock::new();
    let semaphore = SERVERS
        .get_or_init(Default::default)
        .lock()
        .expect("startup slots lock")
        .entry(server)
        .or_insert_with(|| Arc::new(Semaphore::new(STARTUPS_PER_SERVER)))
        .clone();
    semaphore
        .acquire_owned()
        .await
        .expect("semaphore never closed")
}

/// The first back-off; each next one doubles, up to [`MAX_DELAY`].
const FIRST_DELAY: Duration = Duration::from_millis(50);
const MAX_DELAY: Duration = Duration::from_secs(2);

/// Why one attempt failed, and so whether another may help.
#[derive(Debug)]
pub(super) enum Failure {
    /// Dropped during the handshake or the login (MaxStartups, resets, EOF).
    Transient(ConnectError),
    /// TCP refused or timed out, the handshake timed out, a proxy command ended.
    Network(ConnectError),
    /// Name resolution, host key, authentication, configuration: never tried again.
    Final(ConnectError),
}

impl Failure {
    fn retried(&self, explicit: bool) -> bool {
        match self {
            Failure::Transient(_) => true,
            Failure::Network(_) => explicit,
            Failure::Final(_) => false,
        }
    }

    pub(super) fn into_error(self) -> ConnectError {
        match self {
            Failure::Transient(e) | Failure::Network(e) | Failure::Final(e) => e,
        }
    }
}

/// Runs `attempt` (given its number, from 0) until it succeeds, fails for good, or the
/// retries are spent; `seed` (the hop's name) decorrelates the jitter of hosts started
/// together.
pub(super) async fn with_retries<T, F, Fut>(
    retries: Option<u32>,
    seed: &str,
    attempt: F,
) -> Result<T, ConnectError>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    retry_with(retries, seed, FIRST_DELAY, attempt).await
}

async fn retry_with<T, F, Fut>(
    retries: Option<u32>,
    seed: &str,
    first_delay: Duration,
    mut attempt: F,
) -> Result<T, ConnectError>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let explicit = retries.is_some();
    let allowed = retries.unwrap_or(DEFAULT_RETRIES);
    let mut jitter = Jitter::new(seed);
    let mut number = 0;
    loop {
        match attempt(number).await {
            Ok(value) => return Ok(value),
            Err(failure) if number < allowed && failure.retried(explicit) => {
                tokio::time::sleep(jitter.spread(delay(number, first_delay))).await;
                number += 1;
            }
            Err(failure) => return Err(failure.into_error()),
        }
    }
}

/// The back-off before retry `number + 1`, before jitter.
fn delay(number: u32, first: Duration) -> Duration {
    first.saturating_mul(1u32 << number.min(16)).min(MAX_DELAY)
}

/// A small xorshift generator: jitter needs spread, not secrecy.
struct Jitter(u64);

impl Jitter {
    fn new(seed: &str) -> Jitter {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        // FNV-1a of the seed, so hosts started in the same nanosecond still differ.
        let hash = seed.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        });
        Jitter((nanos ^ hash) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// `base` times a factor in [0.5, 1.5).
    fn spread(&mut self, base: Duration) -> Duration {
        let factor = 0.5 + (self.next() % 1000) as f64 / 1000.0;
        base.mul_f64(factor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: Duration = Duration::from_micros(1);

    fn error() -> ConnectError {
        ConnectError::Ssh {
            address: "h".into(),
            port: 22,
            message: "handshake failed: Disconnected".into(),
        }
    }

    #[test]
    fn back_off_doubles_up_to_a_cap_and_jitter_stays_within_half() {
        assert_eq!(delay(0, FIRST_DELAY), Duration::from_millis(50));
        assert_eq!(delay(3, FIRST_DELAY), Duration::from_millis(400));
        assert_eq!(delay(10, FIRST_DELAY), MAX_DELAY);
        assert_eq!(delay(40, FIRST_DELAY), MAX_DELAY);
        let mut jitter = Jitter::new("web1");
        for _ in 0..100 {
            let d = jitter.spread(Duration::from_millis(100));
            assert!(d >= Duration::from_millis(50) && d < Duration::from_millis(150));
        }
    }

    #[tokio::test]
    async fn transient_failures_are_retried_final_ones_never() {
        let mut calls = 0;
        let result = retry_with(None, "h", TINY, |_| {
            calls += 1;
            let fail = calls < 4;
            async move {
                if fail {
                    Err(Failure::Transient(error()))
                } else {
                    Ok(calls)
                }
            }
        })
        .await;
        assert_eq!(result.unwrap(), 4);

        let mut calls = 0;
        let result: Result<(), _> = retry_with(Some(5), "h", TINY, |_| {
            calls += 1;
            async { Err(Failure::Final(error())) }
        })
        .await;
        assert!(result.is_err());
        assert_eq!(calls, 1);

        // Refused connections: only when retries were asked for.
        let mut calls = 0;
        let _: Result<(), _> = retry_with(None, "h", TINY, |_| {
            calls += 1;
            async { Err(Failure::Network(error())) }
        })
        .await;
        assert_eq!(calls, 1);
        let mut calls = 0;
        let _: Result<(), _> = retry_with(Some(2), "h", TINY, |_| {
            calls += 1;
            async { Err(Failure::Network(error())) }
        })
        .await;
        assert_eq!(calls, 3);

        // The default bound.
        let mut calls = 0;
        let _: Result<(), _> = retry_with(None, "h", TINY, |_| {
            calls += 1;
            async { Err(Failure::Transient(error())) }
        })
        .await;
        assert_eq!(calls, DEFAULT_RETRIES + 1);
    }
}
