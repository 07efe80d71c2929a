//! Roles inside Ansible collections: `namespace.collection.role` names, found under
//! `<path>/ansible_collections/<namespace>/<collection>/roles/<role>` for each collections
//! path, as ansible-playbook finds them.

use std::path::{Path, PathBuf};

/// A role's fully qualified collection name, split: `("grafana", "grafana", "loki")`.
/// Anything else (a plain name, a legacy `author.role` name, a path) is not one.
pub fn split_role_fqcn(name: &str) -> Option<(&str, &str, &str)> {
    let mut parts = name.split('.');
    let (Some(namespace), Some(collection), Some(role), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    [namespace, collection, role]
        .iter()
        .all(|part| is_identifier(part))
        .then_some((namespace, collection, role))
}

use crate::plugins::catalog::is_identifier;

/// Ansible's `collections_path` when none is configured.
pub fn default_collections_path(home: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = home
        .map(|h| h.join(".ansible/collections"))
        .into_iter()
        .collect();
    dirs.push(PathBuf::from("/usr/share/ansible/collections"));
    dirs
}

/// The `roles/` directories of collection `namespace.collection`, in search order: the
/// `collections/` directory beside the playbook first (ansible-playbook searches it before
/// the configured paths), then each collections path.
pub fn collection_roles_dirs(
    namespace: &str,
    collection: &str,
    playbook_dir: &Path,
    collections_path: &[PathBuf],
) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::iter::once(playbook_dir.join("collections"))
        .chain(collections_path.iter().cloned())
        .map(|base| {
            base.join("ansible_collections")
                .join(namespace)
                .join(collection)
                .join("roles")
        })
        .collect();
    dirs.dedup();
    dirs
}

/// For a role inside a collection, `namespace.collection.name` when that collection ships
/// a module `name` (`plugins/modules/<name>.py`).
pub fn enclosing_collection_module(role_dir: &Path, name: &str) -> Option<String> {
    let collection = enclosing_collection_roles(role_dir)?.parent()?;
    let namespace = collection.parent()?;
    if !collection
        .join("plugins/modules")
        .join(format!("{name}.py"))
        .is_file()
    {
        return None;
    }
    let namespace = namespace.file_name()?.to_string_lossy();
    let collection = collection.file_name()?.to_string_lossy();
    Some(format!("{namespace}.{collection}.{name}"))
}

/// For a role that lives in a collection, that collection's `roles/` directory: short
/// role names used inside it resolve there first.
pub fn enclosing_collection_roles(role_dir: &Path) -> Option<&Path> {
    let roles = role_dir.parent()?;
    let collection = roles.parent()?;
    let root = collection.parent()?.parent()?;
    (roles.file_name()? == "roles" && root.file_name()? == "ansible_collections").then_some(roles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_collection_roles_short_module_names_resolve_in_its_collection() {
        let dir = tempfile::tempdir().unwrap();
        let coll = dir.path().join("ansible_collections/community/zabbix");
        std::fs::create_dir_all(coll.join("plugins/modules")).unwrap();
        std::fs::create_dir_all(coll.join("roles/agent")).unwrap();
        std::fs::write(coll.join("plugins/modules/zabbix_host.py"), "").unwrap();
        let role = coll.join("roles/agent");
        assert_eq!(
            enclosing_collection_module(&role, "zabbix_host").as_deref(),
            Some("community.zabbix.zabbix_host")
        );
        assert_eq!(enclosing_collection_module(&role, "nope"), None);
        assert_eq!(enclosing_collection_module(dir.path(), "zabbix_host"), None);
    }

    #[test]
    fn only_three_identifiers_make_a_role_fqcn() {
        assert_eq!(
            split_role_fqcn("grafana.grafana.opentelemetry_collector"),
            Some(("grafana", "grafana", "opentelemetry_collector"))
        );
        assert_eq!(split_role_fqcn("common"), None);
        // Legacy Galaxy roles are `author.role`, searched in roles_path.
        assert_eq!(split_role_fqcn("geerlingguy.nginx"), None);
        assert_eq!(split_role_fqcn("a.b.c.d"), None);
        assert_eq!(split_role_fqcn("a..c"), None);
        assert_eq!(split_role_fqcn("a.b-c.d"), None);
        assert_eq!(split_role_fqcn("1a.b.c"), None);
        assert_eq!(split_role_fqcn("../roles.x.y"), None);
    }

    #[test]
    fn collection_roles_are_searched_beside_the_playbook_then_in_each_path() {
        assert_eq!(
            collection_roles_dirs(
                "ns",
                "coll",
                Path::new("/play"),
                &[PathBuf::from("/c1"), PathBuf::from("/c2")]
            ),
            [
                "/play/collections/ansible_collections/ns/coll/roles",
                "/c1/ansible_collections/ns/coll/roles",
                "/c2/ansible_collections/ns/coll/roles",
            ]
            .map(PathBuf::from)
        );
        assert_eq!(
            default_collections_path(Some(Path::new("/home/u"))),
            [
                "/home/u/.ansible/collections",
                "/usr/share/ansible/collections"
            ]
            .map(PathBuf::from)
        );
    }

    #[test]
    fn a_role_inside_a_collection_knows_its_collection() {
        assert_eq!(
            enclosing_collection_roles(Path::new("/c/ansible_collections/ns/coll/roles/r")),
            Some(Path::new("/c/ansible_collections/ns/coll/roles"))
        );
        assert_eq!(enclosing_collection_roles(Path::new("/play/roles/r")), None);
        assert_eq!(
            enclosing_collection_roles(Path::new("/x/ns/coll/roles/r")),
            None
        );
    }
}
