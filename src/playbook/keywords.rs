//! Play keywords that decide which hosts run when: `serial`, `order`, `any_errors_fatal`,
//! `max_fail_percentage`.

/// One `serial` entry: a host count or a percentage of the play's hosts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BatchSize {
    Hosts(i64),
    Percent(f64),
}

impl BatchSize {
    /// `5`, `"5"` or `"30%"`.
    pub fn parse(text: &str) -> Option<BatchSize> {
        let text = text.trim();
        match text.strip_suffix('%') {
            Some(pct) => pct.trim().parse().ok().map(BatchSize::Percent),
            None => text.parse().ok().map(BatchSize::Hosts),
        }
    }

    /// Ansible's `pct_to_int`: a percentage rounds down but is at least one host; zero or
    /// less means every host.
    fn hosts(self, total: usize) -> usize {
        let n = match self {
            BatchSize::Hosts(n) => n,
            BatchSize::Percent(p) => ((total as f64 * p / 100.0) as i64).max(1),
        };
        if n <= 0 { total } else { n as usize }
    }
}

/// `order`: how the play's hosts are ordered before batching.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostOrder {
    #[default]
    Inventory,
    ReverseInventory,
    Sorted,
    ReverseSorted,
    Shuffle,
}

impl HostOrder {
    pub const NAMES: &[&str] = &[
        "inventory",
        "reverse_inventory",
        "sorted",
        "reverse_sorted",
        "shuffle",
    ];

    pub fn parse(text: &str) -> Option<HostOrder> {
        Some(match text {
            "inventory" => HostOrder::Inventory,
            "reverse_inventory" => HostOrder::ReverseInventory,
            "sorted" => HostOrder::Sorted,
            "reverse_sorted" => HostOrder::ReverseSorted,
            "shuffle" => HostOrder::Shuffle,
            _ => return None,
        })
    }

    /// The hosts in this order; `seed` drives `shuffle`.
    pub fn apply(self, mut hosts: Vec<String>, seed: u64) -> Vec<String> {
        match self {
            HostOrder::Inventory => {}
            HostOrder::ReverseInventory => hosts.reverse(),
            HostOrder::Sorted => hosts.sort(),
            HostOrder::ReverseSorted => {
                hosts.sort();
                hosts.reverse();
            }
            HostOrder::Shuffle => {
                // Fisher-Yates with xorshift: no crate needed for a host order.
                let mut state = seed | 1;
                for i in (1..hosts.len()).rev() {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    hosts.swap(i, (state % (i as u64 + 1)) as usize);
                }
            }
        }
        hosts
    }
}

/// The play keywords that shape its run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PlayKeywords {
    /// `serial`: batch sizes, the last one repeating; empty means one batch.
    pub serial: Vec<BatchSize>,
    pub order: HostOrder,
    /// A failure on any host ends the play for every host.
    pub any_errors_fatal: bool,
    /// The play ends for every host once more than this share of a batch failed.
    pub max_fail_percentage: Option<f64>,
    /// `strategy: free` (or `host_pinned`): each host goes through the tasks at its own
    /// pace instead of every host finishing a task before the next starts.
    pub free: bool,
}

/// Ansible's serialized batches: sizes from `serial` in turn (the last repeats),
/// percentages of all the play's hosts.
pub fn batches(hosts: Vec<String>, serial: &[BatchSize]) -> Vec<Vec<String>> {
    let total = hosts.len();
    let mut rest = hosts;
    let mut out = Vec::new();
    let mut index = 0;
    while !rest.is_empty() {
        let size = serial
            .get(index)
            .or(serial.last())
            .map_or(total, |s| s.hosts(total))
            .min(rest.len());
        out.push(rest.drain(..size).collect());
        index += 1;
    }
    out
}

/// Whether a batch's failures pass `max_fail_percentage` (strictly more, as Ansible).
pub fn too_many_failed(failed: usize, batch: usize, max_fail_percentage: f64) -> bool {
    batch > 0 && (failed as f64 * 100.0 / batch as f64) > max_fail_percentage
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("h{i}")).collect()
    }

    fn sizes(hosts: usize, serial: &[BatchSize]) -> Vec<usize> {
        batches(names(hosts), serial).iter().map(Vec::len).collect()
    }

    #[test]
    fn serial_batches_as_ansible_cuts_them() {
        assert_eq!(sizes(5, &[]), [5]);
        assert_eq!(sizes(5, &[BatchSize::Hosts(2)]), [2, 2, 1]);
        assert_eq!(sizes(5, &[BatchSize::Hosts(0)]), [5]);
        assert_eq!(sizes(10, &[BatchSize::Percent(30.0)]), [3, 3, 3, 1]);
        assert_eq!(sizes(2, &[BatchSize::Percent(10.0)]), [1, 1]);
        assert_eq!(
            sizes(
                10,
                &[
                    BatchSize::Hosts(1),
                    BatchSize::Hosts(3),
                    BatchSize::Percent(50.0)
                ]
            ),
            [1, 3, 5, 1]
        );
        assert_eq!(
            batches(names(3), &[BatchSize::Hosts(2)]),
            [vec!["h1", "h2"], vec!["h3"]]
        );
    }

    #[test]
    fn batch_sizes_parse() {
        assert_eq!(BatchSize::parse("3"), Some(BatchSize::Hosts(3)));
        assert_eq!(BatchSize::parse("25%"), Some(BatchSize::Percent(25.0)));
        assert_eq!(BatchSize::parse("x"), None);
    }

    #[test]
    fn host_orders() {
        let hosts = vec!["b".to_string(), "c".into(), "a".into()];
        let order = |o: HostOrder| o.apply(hosts.clone(), 42);
        assert_eq!(order(HostOrder::Inventory), ["b", "c", "a"]);
        assert_eq!(order(HostOrder::ReverseInventory), ["a", "c", "b"]);
        assert_eq!(order(HostOrder::Sorted), ["a", "b", "c"]);
        assert_eq!(order(HostOrder::ReverseSorted), ["c", "b", "a"]);
        let mut shuffled = order(HostOrder::Shuffle);
        shuffled.sort();
        assert_eq!(shuffled, ["a", "b", "c"]);
        assert_eq!(HostOrder::parse("sorted"), Some(HostOrder::Sorted));
        assert_eq!(HostOrder::parse("random"), None);
    }

    #[test]
    fn max_fail_percentage_is_strictly_more() {
        assert!(!too_many_failed(1, 2, 50.0));
        assert!(too_many_failed(2, 3, 50.0));
        assert!(too_many_failed(1, 10, 0.0));
        assert!(!too_many_failed(0, 10, 0.0));
    }
}
