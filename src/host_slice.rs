//! `--slice K/N`: one stable N-th of the inventory's hosts, so that a fleet too large for
//! one controller can be split over N runs by whatever starts jobs (a CI matrix, a
//! Kubernetes Indexed Job), each run given its own K.
//!
//! A host's slice depends on its name alone: the first 8 bytes of SHA-256 of the
//! inventory hostname, read big-endian, modulo N, plus one. Every controller agrees
//! without talking to the others, whatever order or machine it reads the inventory on,
//! and adding or removing hosts moves no other host to another slice. The price is that
//! slices are only statistically even; for a handful of hosts some slices may be empty.
//! The same number in Python: `int.from_bytes(sha256(name.encode()).digest()[:8], "big") % N + 1`.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostSlice {
    /// 1-based: the K of K/N.
    index: u64,
    count: u64,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "--slice {given}: {reason}; give K/N with 1 <= K <= N, e.g. --slice 2/4 for the second of four slices"
)]
pub struct SliceError {
    given: String,
    reason: &'static str,
}

impl HostSlice {
    /// The slice (1..=count) a host belongs to when the fleet is cut in `count`.
    pub fn of(host: &str, count: u64) -> u64 {
        let digest = Sha256::digest(host.as_bytes());
        let mut head = [0u8; 8];
        head.copy_from_slice(&digest[..8]);
        u64::from_be_bytes(head) % count + 1
    }

    pub fn holds(&self, host: &str) -> bool {
        Self::of(host, self.count) == self.index
    }
}

impl FromStr for HostSlice {
    type Err = SliceError;

    fn from_str(given: &str) -> Result<Self, SliceError> {
        let fail = |reason| SliceError {
            given: given.to_string(),
            reason,
        };
        let (index, count) = given
            .split_once('/')
            .ok_or_else(|| fail("there is no '/' between K and N"))?;
        let number = |text: &str| text.trim().parse::<u64>().ok();
        let (Some(index), Some(count)) = (number(index), number(count)) else {
            return Err(fail("K and N must be whole numbers"));
        };
        if count == 0 {
            return Err(fail("N must be at least 1"));
        }
        if index == 0 || index > count {
            return Err(fail("K is out of range"));
        }
        Ok(HostSlice { index, count })
    }
}

impl fmt::Display for HostSlice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(text: &str) -> HostSlice {
        text.parse().unwrap()
    }

    #[test]
    fn every_host_is_in_exactly_one_slice() {
        let hosts: Vec<String> = (0..500).map(|i| format!("web{i:03}.example")).collect();
        let slices: Vec<HostSlice> = (1..=7).map(|k| slice(&format!("{k}/7"))).collect();
        let mut sizes = [0usize; 7];
        for host in &hosts {
            let holders: Vec<usize> = (0..7).filter(|&k| slices[k].holds(host)).collect();
            assert_eq!(holders.len(), 1, "{host} is in slices {holders:?}");
            sizes[holders[0]] += 1;
        }
        // 500/7 is about 71: a hash spreads them within a few dozen of it.
        assert!(sizes.iter().all(|&n| (40..=110).contains(&n)), "{sizes:?}");
    }

    #[test]
    fn a_hosts_slice_is_its_names_sha256_so_anyone_can_compute_it() {
        // python3 -c 'import hashlib; print(int.from_bytes(hashlib.sha256(b"web1").digest()[:8], "big") % 4 + 1)'
        assert_eq!(HostSlice::of("web1", 4), 3);
        assert_eq!(HostSlice::of("localhost", 3), 2);
        assert_eq!(HostSlice::of("anything", 1), 1);
    }

    #[test]
    fn bad_slices_say_what_to_give() {
        for (given, reason) in [
            ("3", "there is no '/' between K and N"),
            ("a/4", "K and N must be whole numbers"),
            ("1/x", "K and N must be whole numbers"),
            ("0/4", "K is out of range"),
            ("5/4", "K is out of range"),
            ("1/0", "N must be at least 1"),
        ] {
            assert_eq!(
                given.parse::<HostSlice>().unwrap_err().to_string(),
                format!(
                    "--slice {given}: {reason}; give K/N with 1 <= K <= N, e.g. --slice 2/4 for the second of four slices"
                )
            );
        }
        assert_eq!(slice(" 2 / 4 ").to_string(), "2/4");
    }
}
