//! Controller-side Python plugins: the filter, test, lookup and action plugins a playbook
//! ships beside itself, in its roles, in collections or in configured paths. `catalog`
//! finds them as Ansible's plugin loader does, `host` runs them in one Python process per
//! run (`host.py`), started only when a Python plugin is needed, and `python` finds the
//! controller's Python. The template engine calls filters, tests and lookups through
//! here; action plugins run as the `modules::action_plugin` module.

pub mod catalog;
pub(crate) mod controller_python;
pub mod host;
pub mod python;

pub use catalog::{Catalog, ConfiguredPaths, Kind, PluginFile};
pub use host::{Call, Conversation, ErrorKind, Host, PluginError, Step, host};
