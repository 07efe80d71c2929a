//! `--list-hosts`, `--list-tasks`, `--list-tags` and `--syntax-check`: what would run,
//! printed in ansible-playbook's exact layout (users' scripts parse it), without
//! connecting to any host.

use std::collections::BTreeSet;

use crate::inventory::Inventory;
use crate::playbook::{Playbook, Section, TagFilter, Task, selected};

/// Which listings were asked for; any mix of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Listings {
    pub hosts: bool,
    pub tasks: bool,
    pub tags: bool,
}

impl Listings {
    pub fn any(&self) -> bool {
        self.hosts || self.tasks || self.tags
    }
}

/// `--syntax-check`'s output for one playbook that loaded.
pub fn syntax_check(shown_path: &str) -> String {
    format!("\nplaybook: {shown_path}\n")
}

/// The listing of one playbook given on the command line (`shown_path` as the user wrote
/// it): `playbooks` are what loading it gave, imported playbooks included, whose plays are
/// numbered on as one list, as Ansible does. `filter` is the tag selection: for
/// `--list-tags` without tag flags, pass [`TagFilter::for_listing_tags`]'s, which lists
/// `never` tasks too, as Ansible does.
/// `--limit` and `--slice`, which narrow every play's hosts.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostFilter<'a> {
    pub limit: Option<&'a str>,
    pub slice: Option<crate::host_slice::HostSlice>,
}

pub fn render(
    playbooks: &[Playbook],
    shown_path: &str,
    inventory: &Inventory,
    narrow: HostFilter<'_>,
    what: Listings,
    filter: &TagFilter,
) -> Result<String, String> {
    let mut out = format!("\nplaybook: {shown_path}\n");
    let plays = playbooks.iter().flat_map(|p| &p.plays);
    for (index, play) in plays.enumerate() {
        let play_tags: BTreeSet<&str> = play.tags.iter().map(String::as_str).collect();
        out.push_str(&format!(
            "\n  play #{} ({}): {}\tTAGS: [{}]\n",
            index + 1,
            play.host_patterns.join(","),
            play.name,
            play_tags.iter().copied().collect::<Vec<_>>().join(",")
        ));
        if what.hosts {
            let mut hosts = inventory.select(&play.hosts).map_err(|e| e.to_string())?;
            if let Some(limit) = narrow.limit {
                hosts = inventory.limit(hosts, limit).map_err(|e| e.to_string())?;
            }
            if let Some(slice) = narrow.slice {
                hosts.retain(|host| slice.holds(host));
            }
            out.push_str(&format!(
                "    pattern: {}\n    hosts ({}):\n",
                python_list(&play.host_patterns),
                hosts.len()
            ));
            for host in hosts {
                out.push_str(&format!("      {host}\n"));
            }
        }
        if !(what.tasks || what.tags) {
            continue;
        }
        if what.tasks {
            out.push_str("    tasks:\n");
        }
        let mut all_tags = play_tags.clone();
        let listed = play
            .tasks
            .iter()
            .filter(|t| !t.implicit && in_block_sections(t) && selected(&t.tags, filter));
        for task in listed {
            all_tags.extend(task.tags.iter().map(String::as_str));
            if what.tasks {
                let tags: BTreeSet<&str> = play_tags
                    .iter()
                    .copied()
                    .chain(task.tags.iter().map(String::as_str))
                    .collect();
                // ansible-playbook lists an unnamed role task by its action alone.
                let name = match &task.name {
                    Some(_) => task.display_name(),
                    None => task.action.clone(),
                };
                out.push_str(&format!(
                    "      {name}\tTAGS: [{}]\n",
                    tags.into_iter().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        if what.tags {
            out.push_str(&format!(
                "      TASK TAGS: [{}]\n",
                all_tags.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    Ok(out)
}

/// Ansible lists only blocks' main tasks: never a `rescue` or `always` (nor their tags).
fn in_block_sections(task: &Task) -> bool {
    task.frames.iter().all(|f| f.section == Section::Block)
}

/// A list of strings as Python's `repr` prints it (`['web', 'db']`).
fn python_list(items: &[String]) -> String {
    let reprs: Vec<String> = items.iter().map(|s| python_str(s)).collect();
    format!("[{}]", reprs.join(", "))
}

fn python_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::from(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playbook::load_playbook_text;
    use std::path::Path;

    const SITE: &str = "\
- name: First play
  hosts: all
  tags: [p1, zeta]
  tasks:
    - name: untagged task
      command: \"true\"
    - command: echo hi
    - debug: msg=x
      tags: foo
    - name: block
      tags: blk
      block:
        - name: in block
          debug: msg=y
          tags: \"a, b\"
    - meta: flush_handlers
    - name: never task
      debug: msg=n
      tags: [never, nv]
    - name: always task
      debug: msg=a
      tags: always
- hosts: web,db
  gather_facts: no
  tasks:
    - name: second
      debug: msg=z
- hosts: [web, db]
  tasks: []
";

    fn inventory() -> Inventory {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts");
        std::fs::write(&path, "[web]\nh1\nh2\n[db]\nh3\n").unwrap();
        Inventory::load(&[path.display().to_string()]).unwrap()
    }

    fn listing(what: Listings, filter: &TagFilter, limit: Option<&str>) -> String {
        let pb = load_playbook_text(Path::new("site.yml"), SITE).unwrap();
        let narrow = HostFilter { limit, slice: None };
        render(&[pb], "site.yml", &inventory(), narrow, what, filter).unwrap()
    }

    /// Each expected text below is what ansible-playbook 2.19 printed for SITE (its set
    /// orders aside: play tags and hosts come out sorted / in inventory order here).
    #[test]
    fn list_tasks_as_ansible() {
        let what = Listings {
            tasks: true,
            ..Default::default()
        };
        assert_eq!(
            listing(what, &TagFilter::default(), None),
            "\nplaybook: site.yml\n\
             \n  play #1 (all): First play\tTAGS: [p1,zeta]\n    tasks:\n\
             \x20     untagged task\tTAGS: [p1, zeta]\n\
             \x20     command\tTAGS: [p1, zeta]\n\
             \x20     debug\tTAGS: [foo, p1, zeta]\n\
             \x20     in block\tTAGS: [a, b, blk, p1, zeta]\n\
             \x20     meta\tTAGS: [p1, zeta]\n\
             \x20     always task\tTAGS: [always, p1, zeta]\n\
             \n  play #2 (web,db): web,db\tTAGS: []\n    tasks:\n\
             \x20     second\tTAGS: []\n\
             \n  play #3 (web,db): web,db\tTAGS: []\n    tasks:\n"
        );
    }

    /// ansible-playbook 2.21: a role's named task lists as `role : name`, an unnamed one
    /// by its action alone (the banner still says `role : action`).
    #[test]
    fn role_tasks_list_as_ansible() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("roles/nr/tasks")).unwrap();
        std::fs::write(
            dir.path().join("roles/nr/tasks/main.yml"),
            "- name: named one\n  debug: msg=x\n- debug: msg=y\n",
        )
        .unwrap();
        let site = dir.path().join("site.yml");
        std::fs::write(&site, "- hosts: all\n  roles: [{role: nr, tags: r}]\n").unwrap();
        let pb = crate::playbook::load_playbook(&site).unwrap();
        let what = Listings {
            tasks: true,
            ..Default::default()
        };
        let out = render(
            &[pb],
            "site.yml",
            &inventory(),
            HostFilter::default(),
            what,
            &TagFilter::default(),
        );
        assert!(
            out.unwrap()
                .ends_with("    tasks:\n      nr : named one\tTAGS: [r]\n      debug\tTAGS: [r]\n"),
        );
    }

    #[test]
    fn list_hosts_as_ansible() {
        let what = Listings {
            hosts: true,
            ..Default::default()
        };
        let out = listing(what, &TagFilter::default(), None);
        assert!(
            out.starts_with(
                "\nplaybook: site.yml\n\n  play #1 (all): First play\tTAGS: [p1,zeta]\n    pattern: ['all']\n    hosts (3):\n      h1\n      h2\n      h3\n"
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "\n  play #2 (web,db): web,db\tTAGS: []\n    pattern: ['web,db']\n    hosts (3):\n"
            ),
            "{out}"
        );
        assert!(
            out.ends_with("\n  play #3 (web,db): web,db\tTAGS: []\n    pattern: ['web', 'db']\n    hosts (3):\n      h1\n      h2\n      h3\n"),
            "{out}"
        );
        let limited = listing(what, &TagFilter::default(), Some("h1"));
        assert!(
            limited.contains("    hosts (1):\n      h1\n\n"),
            "{limited}"
        );
    }

    #[test]
    fn list_tags_lists_never_tasks_unless_tags_were_given() {
        let what = Listings {
            tags: true,
            ..Default::default()
        };
        let filter = TagFilter::default().for_listing_tags(false);
        assert_eq!(
            listing(what, &filter, None),
            "\nplaybook: site.yml\n\
             \n  play #1 (all): First play\tTAGS: [p1,zeta]\n\
             \x20     TASK TAGS: [a, always, b, blk, foo, never, nv, p1, zeta]\n\
             \n  play #2 (web,db): web,db\tTAGS: []\n      TASK TAGS: []\n\
             \n  play #3 (web,db): web,db\tTAGS: []\n      TASK TAGS: []\n"
        );
    }

    #[test]
    fn all_listings_together_follow_the_tag_flags() {
        let what = Listings {
            hosts: true,
            tasks: true,
            tags: true,
        };
        let filter = TagFilter::from_args(&["nv,foo".into()], &[]).for_listing_tags(true);
        let out = listing(what, &filter, None);
        assert!(
            out.contains(
                "    hosts (3):\n      h1\n      h2\n      h3\n    tasks:\n\
                 \x20     debug\tTAGS: [foo, p1, zeta]\n\
                 \x20     never task\tTAGS: [never, nv, p1, zeta]\n\
                 \x20     always task\tTAGS: [always, p1, zeta]\n\
                 \x20     TASK TAGS: [always, foo, never, nv, p1, zeta]\n"
            ),
            "{out}"
        );
        assert!(
            out.contains("    tasks:\n      TASK TAGS: []\n\n  play #3"),
            "{out}"
        );
    }

    #[test]
    fn rescue_and_always_tasks_are_not_listed() {
        let pb = load_playbook_text(
            Path::new("blk.yml"),
            "- hosts: all
  tasks:
    - block:
        - name: b1
          debug: msg=1
        - block:
            - name: inner
              debug: msg=1
          rescue:
            - name: inner rescue
              debug: msg=1
      rescue:
        - name: r1
          debug: msg=1
          tags: rt
      always:
        - name: a1
          debug: msg=1
    - name: after
      debug: msg=1
",
        )
        .unwrap();
        let what = Listings {
            tasks: true,
            tags: true,
            ..Default::default()
        };
        let out = render(
            &[pb],
            "blk.yml",
            &inventory(),
            HostFilter::default(),
            what,
            &TagFilter::default(),
        );
        // What ansible-playbook 2.19 prints for it.
        assert_eq!(
            out.unwrap(),
            "\nplaybook: blk.yml\n\n  play #1 (all): all\tTAGS: []\n    tasks:\n      b1\tTAGS: []\n      inner\tTAGS: []\n      after\tTAGS: []\n      TASK TAGS: []\n"
        );
    }

    #[test]
    fn syntax_check_names_the_playbook() {
        assert_eq!(syntax_check("site.yml"), "\nplaybook: site.yml\n");
    }

    #[test]
    fn python_reprs() {
        assert_eq!(python_list(&["all".into()]), "['all']");
        assert_eq!(python_str("it's"), "\"it's\"");
        assert_eq!(python_str("a'\"b"), "'a\\'\"b'");
    }
}
