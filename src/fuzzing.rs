//! Entry points for the fuzz targets in `fuzz/` (built only with the `fuzzing` feature):
//! each takes the fuzzer's bytes the way turbo-play receives that input and throws the
//! result away. A panic, a hang or an unbounded allocation in here is a bug in the part
//! it calls; each one found has a regression test beside that part.

use std::cell::RefCell;
use std::path::Path;

use minijinja::Value as MjValue;

use crate::inventory::Inventory;
use crate::template::Templar;
use crate::vault::{Envelope, Secret, Vault};

/// An INI inventory file's text.
pub fn inventory_ini(text: &str) {
    if let Ok(inventory) = crate::inventory::from_text("hosts", text) {
        touch_inventory(&inventory);
    }
}

/// A YAML inventory file's text.
pub fn inventory_yaml(text: &str) {
    if let Ok(inventory) = crate::inventory::from_text("hosts.yml", text) {
        touch_inventory(&inventory);
    }
}

fn touch_inventory(inventory: &Inventory) {
    for host in inventory.hosts() {
        let _ = inventory.host_vars(&host.name);
        let _ = inventory.group_names(&host.name);
    }
    let _ = inventory.select("all:!ungrouped");
}

/// A playbook's text, loaded into validated plays. Its directory does not exist, so
/// imports and roles fail to resolve rather than read the machine's files.
pub fn playbook(text: &str) {
    let _ = crate::playbook::load_playbook_text(Path::new("/nonexistent/fuzz/site.yml"), text);
}

/// Instructions one fuzzed render may run: plenty for any template that fits the
/// fuzzer's inputs without nested loops over large ranges.
const TEMPLATE_FUEL: u64 = 50_000;

thread_local! {
    static TEMPLAR: RefCell<Option<Templar>> = const { RefCell::new(None) };
}

/// A template's text, rendered both as a YAML value and as a template file, with a few
/// variables of each kind to reach the filters with.
pub fn template(text: &str) {
    TEMPLAR.with(|cell| {
        let mut cell = cell.borrow_mut();
        let templar = cell.get_or_insert_with(|| Templar::for_fuzzing(TEMPLATE_FUEL));
        let vars = MjValue::from_serialize(serde_json::json!({
            "s": "Hello, World",
            "n": 42,
            "f": 0.5,
            "l": [1, "two", [3], {"k": "v"}],
            "d": {"a": 1, "b": [true, null]},
            "none": null,
        }));
        let _ = templar.render_value(&serde_json::Value::String(text.to_string()), &vars);
        let _ = templar.render_str(text, &vars);
    });
}

/// A file's bytes as the vault reader gets them: the envelope, then decryption with a
/// password that the fuzzer's seeds were encrypted with.
pub fn vault(bytes: &[u8]) {
    let _ = Envelope::parse(bytes);
    let vault = Vault::new(vec![Secret::new("default", "fuzz")], false);
    let _ = vault.decrypt_if_encrypted(bytes.to_vec());
}
