//! The access-pattern map: the committed `docs/access-patterns.md` is what the
//! declarations generate, and the declarations hold together: one pattern per shape,
//! every item a pattern writes is a declared kind, every kind is written by some
//! pattern, every table and index is in the map.

use events_schema::Context;
use events_schema::item_kinds;
use infra::access::{AccessPattern, Action, Op, Sk, Written};
use std::collections::BTreeMap;

fn catalog() -> Vec<&'static AccessPattern> {
    vitals::access::catalog()
}

#[test]
fn the_committed_map_is_what_the_declarations_generate() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/access-patterns.md");
    let committed = std::fs::read_to_string(&path).expect("docs/access-patterns.md");
    assert!(
        committed == vitals::access_doc::document(),
        "docs/access-patterns.md is stale: regenerate it with \
         `cargo run -p vitals -- docs access-patterns > docs/access-patterns.md`"
    );
}

#[test]
fn no_two_patterns_share_a_shape() {
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    for pattern in catalog() {
        let shape = pattern.shape.to_string();
        if let Some(first) = seen.insert(shape.clone(), pattern.name) {
            panic!(
                "`{first}` and `{}` are the same access ({shape}): one pattern, with both \
                 features",
                pattern.name
            );
        }
        assert!(
            !pattern.name.is_empty() && !pattern.feature.is_empty(),
            "{shape}"
        );
        assert!(pattern.per_user_day >= 0.0 && pattern.items > 0, "{shape}");
    }
}

/// The items a pattern writes: its transaction's or batch's, or its single item's.
fn written_items(pattern: &AccessPattern) -> Vec<Written> {
    let shape = &pattern.shape;
    let single = |action| match shape.sk {
        Sk::Exact(sk) => vec![Written::new(action, shape.table, shape.pk, sk)],
        _ => vec![],
    };
    match &shape.op {
        Op::Transact(items) | Op::Batch(items) => items.to_vec(),
        Op::Put => single(Action::Put),
        Op::Update => single(Action::Update),
        Op::Delete => single(Action::Delete),
        _ => vec![],
    }
}

#[test]
fn every_item_a_pattern_writes_is_a_declared_kind() {
    for pattern in catalog() {
        for item in written_items(pattern) {
            if item.sk == Written::ANY {
                continue;
            }
            assert!(
                item_kinds::find(item.table, item.pk, item.sk).is_some(),
                "`{}` writes {} `{}`/`{}`, which no item kind declares",
                pattern.name,
                item.table,
                item.pk,
                item.sk
            );
        }
    }
}

#[test]
fn every_declared_kind_is_written_by_some_pattern() {
    let catalog = catalog();
    for kind in item_kinds::ALL {
        let written = catalog.iter().any(|p| {
            written_items(p).iter().any(|w| {
                matches!(w.action, Action::Put | Action::Update)
                    && (w.table, w.pk, w.sk) == (kind.table, kind.pk, kind.sk)
            })
        });
        assert!(
            written,
            "{} `{}`/`{}` is declared but no pattern writes it",
            kind.table, kind.pk, kind.sk
        );
    }
}

#[test]
fn every_table_and_index_is_in_the_map() {
    let document = vitals::access_doc::document();
    let catalog = catalog();
    for context in Context::ALL {
        assert!(document.contains(&format!("\n## {context}\n")), "{context}");
        assert!(
            catalog.iter().any(|p| p.shape.table == context),
            "{context} has no pattern"
        );
        assert!(
            item_kinds::ALL.iter().any(|k| k.table == context),
            "{context} has no item kind"
        );
        for gsi in events_schema::tables::table(context).gsis {
            assert!(
                document.contains(gsi.justification.access_pattern),
                "{}",
                gsi.name
            );
            let queried = catalog
                .iter()
                .any(|p| matches!(p.shape.op, Op::QueryIndex { index, .. } if index == gsi.name));
            assert!(queried, "index {} has no pattern that queries it", gsi.name);
        }
    }
    assert!(document.contains("```mermaid"), "the wiring diagram");
}
