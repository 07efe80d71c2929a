//! File modes as Ansible's `mode:` takes them: octal bits, or chmod(1)-style symbolic
//! clauses applied to the current mode, with Ansible's reading of the edge cases (an empty
//! "who" means all, minus the umask; `X` counts the mode as it is so far).

use turbo_proto::FileMode;

const PERM_BITS: u32 = 0o7777;

/// The mode `mode` asks for, given the file's current permission bits.
pub fn resolve(mode: &FileMode, current: u32, is_dir: bool, umask: u32) -> Result<u32, String> {
    match mode {
        FileMode::Bits(bits) => {
            if *bits > PERM_BITS {
                return Err(format!(
                    "mode {bits:o} has bits beyond 07777; give permission bits only"
                ));
            }
            Ok(*bits)
        }
        FileMode::Symbolic(text) => {
            let text = text.trim();
            if !text.is_empty() && text.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
                return u32::from_str_radix(text, 8)
                    .ok()
                    .filter(|bits| *bits <= PERM_BITS)
                    .ok_or_else(|| format!("mode {text} is not a valid octal mode"));
            }
            symbolic(text, current & PERM_BITS, is_dir, umask)
        }
    }
}

fn symbolic(text: &str, current: u32, is_dir: bool, umask: u32) -> Result<u32, String> {
    let bad = |clause: &str| {
        format!(
            "bad symbolic permission for mode: {clause} (expected clauses like u=rw,g=r,o=r or \
             u+x,go-w or a=rX)"
        )
    };
    let mut mode = current;
    for clause in text.split(',') {
        let op_at = clause.find(['+', '-', '=']).ok_or_else(|| bad(clause))?;
        let who = &clause[..op_at];
        if !who.bytes().all(|b| b"ugoa".contains(&b)) {
            return Err(bad(clause));
        }
        let use_umask = who.is_empty();
        let users: &[u8] = if who.is_empty() || who.contains('a') {
            b"ugo"
        } else {
            who.as_bytes()
        };
        // The rest alternates operator, permissions, operator, permissions...
        let mut rest = &clause[op_at..];
        while !rest.is_empty() {
            let op = rest.as_bytes()[0];
            let perms_end = rest[1..]
                .find(['+', '-', '='])
                .map_or(rest.len(), |i| i + 1);
            let perms = &rest[1..perms_end];
            rest = &rest[perms_end..];
            if !perms.bytes().all(|b| b"rwxXstugo".contains(&b)) {
                return Err(bad(clause));
            }
            for &user in users {
                let bits = perm_bits(user, perms, mode, is_dir, use_umask, umask);
                mode = match op {
                    b'+' => mode | bits,
                    b'-' => mode & !bits,
                    _ => {
                        let class = match user {
                            b'u' => 0o4700,
                            b'g' => 0o2070,
                            _ => 0o1007,
                        };
                        (mode & !class) | bits
                    }
                };
            }
        }
    }
    Ok(mode)
}

/// The bits `perms` stand for in `user`'s class. `u`/`g`/`o` copy another class's current
/// rwx bits, as chmod does.
fn perm_bits(user: u8, perms: &str, mode: u32, is_dir: bool, use_umask: bool, umask: u32) -> u32 {
    let shift = match user {
        b'u' => 6,
        b'g' => 3,
        _ => 0,
    };
    let allowed = if use_umask { !umask } else { PERM_BITS };
    let mut bits = 0;
    for p in perms.bytes() {
        bits |= match p {
            b'r' => (0o4 << shift) & allowed,
            b'w' => (0o2 << shift) & allowed,
            b'x' => (0o1 << shift) & allowed,
            b'X' if is_dir || mode & 0o111 != 0 => 0o1 << shift,
            b'X' => 0,
            b's' => match user {
                b'u' => 0o4000,
                b'g' => 0o2000,
                _ => 0,
            },
            b't' if user == b'o' => 0o1000,
            b't' => 0,
            b'u' => ((mode >> 6) & 0o7) << shift,
            b'g' => ((mode >> 3) & 0o7) << shift,
            b'o' => (mode & 0o7) << shift,
            _ => 0,
        };
    }
    bits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(text: &str, current: u32, is_dir: bool) -> Result<u32, String> {
        resolve(&FileMode::Symbolic(text.into()), current, is_dir, 0o022)
    }

    #[test]
    fn octal_bits_and_octal_strings() {
        assert_eq!(
            resolve(&FileMode::Bits(0o640), 0o777, false, 0).unwrap(),
            0o640
        );
        assert_eq!(sym("0755", 0, false).unwrap(), 0o755);
        assert_eq!(sym("644", 0o777, false).unwrap(), 0o644);
        assert!(resolve(&FileMode::Bits(0o10000), 0, false, 0).is_err());
    }

    #[test]
    fn assignments_replace_each_class() {
        assert_eq!(sym("u=rw,g=r,o=r", 0o777, false).unwrap(), 0o644);
        assert_eq!(sym("u=rwx,go=", 0o644, false).unwrap(), 0o700);
        assert_eq!(sym("a=r", 0o4755, false).unwrap(), 0o444);
        assert_eq!(sym("ug=rw,o=", 0o000, false).unwrap(), 0o660);
    }

    #[test]
    fn additions_and_removals_are_relative() {
        assert_eq!(sym("u+x,go-w", 0o666, false).unwrap(), 0o744);
        assert_eq!(sym("a+x", 0o644, false).unwrap(), 0o755);
        assert_eq!(sym("o-rwx", 0o777, false).unwrap(), 0o770);
        assert_eq!(sym("u+r-w", 0o200, false).unwrap(), 0o400);
    }

    #[test]
    fn capital_x_depends_on_directory_or_existing_execute_bits() {
        assert_eq!(sym("a=rX", 0o644, false).unwrap(), 0o444);
        assert_eq!(sym("a=rX", 0o644, true).unwrap(), 0o555);
        assert_eq!(sym("a=rX", 0o744, false).unwrap(), 0o555);
        assert_eq!(sym("go+X", 0o600, true).unwrap(), 0o611);
    }

    #[test]
    fn special_bits_and_copying_classes() {
        assert_eq!(sym("u+s", 0o755, false).unwrap(), 0o4755);
        assert_eq!(sym("g+s", 0o755, true).unwrap(), 0o2755);
        assert_eq!(sym("+t", 0o777, true).unwrap(), 0o1777);
        assert_eq!(sym("g=u", 0o740, false).unwrap(), 0o770);
        assert_eq!(sym("o=g", 0o750, false).unwrap(), 0o755);
    }

    #[test]
    fn empty_who_honours_the_umask() {
        assert_eq!(sym("+w", 0o444, false).unwrap(), 0o644);
        assert_eq!(sym("=rw", 0o000, false).unwrap(), 0o644);
    }

    #[test]
    fn invalid_modes_say_what_is_wrong() {
        for bad in ["u", "z+x", "u+q", "u=rw,,g=r", "rwx", "u+rw g+r"] {
            let err = sym(bad, 0o644, false).unwrap_err();
            assert!(err.contains("bad symbolic permission"), "{bad}: {err}");
        }
        assert!(sym("9999", 0, false).is_err());
    }
}
