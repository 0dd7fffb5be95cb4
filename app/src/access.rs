//! Every declared access pattern of the system: the libraries' (commands, read models,
//! projectors) and the binary's own operators' tools. `vitals docs access-patterns`
//! renders them; the HTTP walk's recording store holds the code to them.

use infra::access::AccessPattern;

/// The binary's own patterns (migration, the residue check, the admin commands).
pub static ACCESS: &[AccessPattern] = &[];

/// Every declared pattern.
pub fn catalog() -> Vec<&'static AccessPattern> {
    let mut all = Vec::new();
    all.extend(infra::access_patterns());
    all.extend(commands::access_patterns());
    all.extend(readmodels::access_patterns());
    all.extend(projectors::access_patterns());
    all.extend(ACCESS.iter());
    all
}
