// Every function of inlay.h is declared in src/sys.rs, and nothing else is: the names
// are read from both files. The plain inlay_*_params_init symbols are left out on
// purpose (sys.rs says why): bindings call the *_init_size functions.
use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;

fn read(relative: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {}", path.display(), e))
}

fn identifier_before_paren(text: &str) -> Option<String> {
    let head = &text[..text.find('(')?];
    let name: String = head.chars().rev().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    Some(name.chars().rev().collect())
}

#[test]
fn sys_declares_every_function_of_inlay_h() {
    let header = read("../../include/inlay/inlay.h");
    let mut c_functions = BTreeSet::new();
    for piece in header.split("INLAY_API").skip(1) {
        if let Some(name) = identifier_before_paren(piece) {
            if name.starts_with("inlay_") && !name.ends_with("_params_init") {
                c_functions.insert(name);
            }
        }
    }
    let sys = read("src/sys.rs");
    let rust_functions: BTreeSet<String> = sys.split("pub fn ").skip(1).filter_map(identifier_before_paren).collect();
    assert!(c_functions.len() > 30, "read {} functions from inlay.h", c_functions.len());
    assert_eq!(
        c_functions.difference(&rust_functions).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "in inlay.h, not in sys.rs"
    );
    assert_eq!(
        rust_functions.difference(&c_functions).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "in sys.rs, not in inlay.h"
    );
}
