//! Network facts: interfaces and their addresses from /proc and /sys, the default IPv4
//! route.

use super::*;
/// The default IPv4 route from /proc/net/route: (interface, gateway).
pub(super) fn parse_default_route(text: &str) -> Option<(String, Ipv4Addr)> {
    text.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 || f[1] != "00000000" || f[7] != "00000000" {
            return None;
        }
        // The kernel prints the address as a host-order (little-endian) word.
        let gateway = u32::from_str_radix(f[2], 16).ok()?;
        Some((f[0].to_string(), Ipv4Addr::from(gateway.to_le_bytes())))
    })
}

fn prefix_len(mask: &IpAddr) -> u32 {
    match mask {
        IpAddr::V4(m) => u32::from(*m).count_ones(),
        IpAddr::V6(m) => u128::from(*m).count_ones(),
    }
}

fn ipv6_scope(address: &std::net::Ipv6Addr) -> &'static str {
    if address.is_loopback() {
        "host"
    } else if address.segments()[0] & 0xffc0 == 0xfe80 {
        "link"
    } else {
        "global"
    }
}

/// An interface's `ipv4` dict: address, broadcast, netmask, network, prefix (a string).
fn ipv4_fact(address: Ipv4Addr, netmask: Option<IpAddr>, broadcast: Option<IpAddr>) -> FactValue {
    let mask = match netmask {
        Some(IpAddr::V4(m)) => m,
        _ => Ipv4Addr::new(255, 255, 255, 255),
    };
    let network = Ipv4Addr::from(u32::from(address) & u32::from(mask));
    map(vec![
        ("address", s(address.to_string())),
        (
            "broadcast",
            s(broadcast.map(|b| b.to_string()).unwrap_or_default()),
        ),
        ("netmask", s(mask.to_string())),
        ("network", s(network.to_string())),
        ("prefix", s(prefix_len(&IpAddr::V4(mask)).to_string())),
    ])
}

fn sys_net(device: &str, file: &str) -> Option<String> {
    read(&format!("/sys/class/net/{device}/{file}")).map(|t| t.trim().to_string())
}

pub(super) fn network(out: &mut Facts) {
    // Ansible lists them in directory order, which is arbitrary; sorted is stable.
    let mut names: Vec<String> = std::fs::read_dir("/sys/class/net")
        .map(|dir| {
            dir.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let addresses = sys::interface_addresses().unwrap_or_default();
    let route = read("/proc/net/route").and_then(|t| parse_default_route(&t));

    let mut all_v4 = Vec::new();
    let mut all_v6 = Vec::new();
    let mut per_device = Vec::new();
    let mut default_ipv4 = Vec::new();
    for device in &names {
        let base = format!("/sys/class/net/{device}");
        let kind_code = sys_net(device, "type").and_then(|t| t.parse::<u32>().ok());
        let kind = if Path::new(&format!("{base}/bridge")).exists() {
            "bridge"
        } else if Path::new(&format!("{base}/bonding")).exists() {
            "bonding"
        } else {
            match kind_code {
                Some(1) => "ether",
                Some(772) => "loopback",
                Some(_) | None => "unknown",
            }
        };
        // As Ansible: no macaddress key for interfaces without one (lo).
        let mac = sys_net(device, "address").filter(|m| !m.is_empty() && m != "00:00:00:00:00:00");
        let speed = sys_net(device, "speed").and_then(|v| v.parse::<i64>().ok());
        let mtu = sys_net(device, "mtu").and_then(|m| m.parse::<i64>().ok());
        let flags = sys_net(device, "flags")
            .and_then(|f| u32::from_str_radix(f.trim_start_matches("0x"), 16).ok())
            .unwrap_or(0);
        let active = sys_net(device, "operstate").is_none_or(|s| s != "down");

        let mut v4 = Vec::new();
        let mut v6 = Vec::new();
        for a in addresses.iter().filter(|a| &a.interface == device) {
            match a.address {
                IpAddr::V4(ip) => {
                    if !ip.is_loopback() {
                        all_v4.push(s(ip.to_string()));
                    }
                    v4.push((ip, a.netmask, a.broadcast));
                }
                IpAddr::V6(ip) => {
                    if !ip.is_loopback() {
                        all_v6.push(s(ip.to_string()));
                    }
                    v6.push(map(vec![
                        ("address", s(ip.to_string())),
                        (
                            "prefix",
                            s(a.netmask.map_or(128, |m| prefix_len(&m)).to_string()),
                        ),
                        ("scope", s(ipv6_scope(&ip))),
                    ]));
                }
            }
        }
        let mut entries = vec![
            ("device", s(device)),
            ("active", FactValue::Bool(active)),
            ("type", s(kind)),
            ("promisc", FactValue::Bool(flags & 0x100 != 0)),
        ];
        if let Some(mac) = &mac {
            entries.push(("macaddress", s(mac)));
        }
        if let Some(speed) = speed {
            entries.push(("speed", FactValue::Int(speed)));
        }
        let link_name = |rel: &str| {
            std::fs::read_link(format!("{base}/{rel}"))
                .ok()
                .and_then(|t| t.file_name().map(|n| n.to_string_lossy().into_owned()))
        };
        if let Some(pciid) = link_name("device") {
            entries.push(("pciid", s(pciid)));
        }
        if let Some(module) = link_name("device/driver/module") {
            entries.push(("module", s(module)));
        }
        if let Some(mtu) = mtu {
            entries.push(("mtu", FactValue::Int(mtu)));
        }
        if let Some(&(ip, mask, bcast)) = v4.first() {
            let ipv4 = ipv4_fact(ip, mask, bcast);
            if route.as_ref().is_some_and(|(iface, _)| iface == device) {
                let gateway = route
                    .as_ref()
                    .map(|(_, g)| g.to_string())
                    .unwrap_or_default();
                let FactValue::Map(fields) = &ipv4 else {
                    unreachable!("ipv4_fact builds a map")
                };
                default_ipv4 = fields.clone();
                default_ipv4.extend([
                    ("alias".to_string(), s(device)),
                    ("gateway".to_string(), s(gateway)),
                    ("interface".to_string(), s(device)),
                    ("type".to_string(), s(kind)),
                ]);
                if let Some(mac) = &mac {
                    default_ipv4.push(("macaddress".to_string(), s(mac)));
                }
                if let Some(mtu) = mtu {
                    default_ipv4.push(("mtu".to_string(), FactValue::Int(mtu)));
                }
                default_ipv4.sort_by(|a, b| a.0.cmp(&b.0));
            }
            entries.push(("ipv4", ipv4));
            if v4.len() > 1 {
                let secondaries = v4[1..]
                    .iter()
                    .map(|&(ip, mask, bcast)| ipv4_fact(ip, mask, bcast))
                    .collect();
                entries.push(("ipv4_secondaries", FactValue::List(secondaries)));
            }
        }
        if !v6.is_empty() {
            entries.push(("ipv6", FactValue::List(v6)));
        }
        per_device.push((device.replace(['-', '.', ':'], "_"), map(entries)));
    }
    out.push((
        "interfaces".into(),
        FactValue::List(names.iter().map(s).collect()),
    ));
    out.push(("all_ipv4_addresses".into(), FactValue::List(all_v4)));
    out.push(("all_ipv6_addresses".into(), FactValue::List(all_v6)));
    out.push(("default_ipv4".into(), FactValue::Map(default_ipv4)));
    out.extend(per_device);
}
