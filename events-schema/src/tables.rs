//! The nine context tables as data. Both storage backends create their tables from
//! these definitions, and the access-pattern document is generated from them, so the
//! justification of an index lives next to the index and cannot drift from it.

use crate::context::Context;

/// Partition key attribute of every table.
pub const PK: &str = "pk";
/// Sort key attribute of every table.
pub const SK: &str = "sk";
/// TTL attribute (epoch seconds) of every table. Only cache rows, OAuth state and dedup
/// markers ever carry it: user health data is deleted by the explicit drain, never by TTL.
pub const TTL: &str = "expires_at";
/// Attribute holding an item's optimistic-concurrency version.
pub const VERSION: &str = "version";
/// Prefix of physical table names unless configured otherwise.
pub const DEFAULT_TABLE_PREFIX: &str = "vitals-";

/// Why an index exists, what it is expected to cost. Required for every GSI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Justification {
    /// The query the index answers and who issues it.
    pub access_pattern: &'static str,
    /// Expected queries against the index.
    pub expected_volume: &'static str,
    /// What the index adds to the bill (writes replicated, storage).
    pub projected_cost: &'static str,
}

/// A global secondary index. Sparse: an item is in the index only while it carries the
/// index's key attribute(s) as strings. Every index projects all attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GsiDef {
    pub name: &'static str,
    pub partition_key: &'static str,
    pub sort_key: Option<&'static str>,
    pub justification: Justification,
}

/// One context table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableDef {
    pub context: Context,
    pub gsis: &'static [GsiDef],
    /// Whether table changes are published (DynamoDB Streams / the embedded change log).
    pub stream: bool,
}

impl TableDef {
    /// The TTL attribute; the same on every table.
    pub fn ttl_attribute(&self) -> &'static str {
        TTL
    }

    /// The physical table name under `prefix`.
    pub fn physical_name(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.context)
    }

    pub fn gsi(&self, name: &str) -> Option<&'static GsiDef> {
        self.gsis.iter().find(|g| g.name == name)
    }
}

const BY_EMAIL: GsiDef = GsiDef {
    name: "by-email",
    partition_key: "email_pk",
    sort_key: None,
    justification: Justification {
        access_pattern: "login and admin lookups: find the PROFILE of a normalized email without \
                         knowing the user id",
        expected_volume: "one query per login, a few per active user per day",
        projected_cost: "profile items only (one per user): one replicated write per profile \
                         change (a sign-in is one: the profile marks its latest session), \
                         storage of one row per user",
    },
};

const CATALOG: GsiDef = GsiDef {
    name: "catalog",
    partition_key: "catalog_pk",
    sort_key: Some("catalog_sk"),
    justification: Justification {
        access_pattern: "browse the curated recipes and meal plans by category, sorted, without \
                         scanning users' meals",
        expected_volume: "a few queries per user session that opens the catalog; cacheable",
        projected_cost: "curated rows only (thousands, written by editors), no user rows: \
                         negligible writes and storage",
    },
};

const BY_STATUS: GsiDef = GsiDef {
    name: "by-status",
    partition_key: "status_pk",
    sort_key: Some("status_sk"),
    justification: Justification {
        access_pattern: "a user's goals in one status (the app's active goals list, progress \
                         jobs) in one Query, without reading progress rows",
        expected_volume: "one query per app open and per progress recomputation",
        projected_cost: "goal items only (a handful per user): one replicated write per goal \
                         change and per recompute of its progress (its revision moves); \
                         progress and projection rows are never in it",
    },
};

const ACTIVE_DAY: GsiDef = GsiDef {
    name: "active-day",
    partition_key: "active_day_pk",
    sort_key: Some("active_day_sk"),
    justification: Justification {
        access_pattern: "the nightly readiness job lists the users active on a day \
                         (DAY#<date> -> USER#<id>) instead of scanning the table",
        expected_volume: "one paginated query per night",
        projected_cost: "ACTIVE_DAY marker rows only (one per active user per day), written \
                         once each",
    },
};

/// The nine tables, in [`Context::ALL`] order.
pub const TABLES: [TableDef; 9] = [
    TableDef {
        context: Context::Identity,
        gsis: &[BY_EMAIL],
        stream: true,
    },
    TableDef {
        context: Context::Nutrition,
        gsis: &[CATALOG],
        stream: true,
    },
    TableDef {
        context: Context::Activity,
        gsis: &[],
        stream: true,
    },
    TableDef {
        context: Context::Sleep,
        gsis: &[],
        stream: true,
    },
    TableDef {
        context: Context::Goals,
        gsis: &[BY_STATUS],
        stream: true,
    },
    TableDef {
        context: Context::Integrations,
        gsis: &[],
        stream: true,
    },
    // A cache keyed by place, not by user: nothing subscribes to it.
    TableDef {
        context: Context::Environment,
        gsis: &[],
        stream: false,
    },
    TableDef {
        context: Context::Insights,
        gsis: &[ACTIVE_DAY],
        stream: true,
    },
    TableDef {
        context: Context::Dashboard,
        gsis: &[],
        stream: true,
    },
];

/// The definition of a context's table.
pub fn table(context: Context) -> &'static TableDef {
    // `TABLES` is in declaration order of `Context`; a test checks it.
    &TABLES[context as usize]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn one_table_per_context_in_order() {
        for (def, context) in TABLES.iter().zip(Context::ALL) {
            assert_eq!(def.context, context);
            assert_eq!(table(context).context, context);
        }
        assert_eq!(
            table(Context::Goals).physical_name("vitals-"),
            "vitals-goals"
        );
    }

    #[test]
    fn every_gsi_is_justified() {
        for def in &TABLES {
            for gsi in def.gsis {
                let j = gsi.justification;
                for (what, text) in [
                    ("access pattern", j.access_pattern),
                    ("expected volume", j.expected_volume),
                    ("projected cost", j.projected_cost),
                ] {
                    assert!(
                        text.split_whitespace().count() >= 5,
                        "GSI {} of {} needs a real {what}",
                        gsi.name,
                        def.context
                    );
                }
            }
        }
    }

    #[test]
    fn index_attributes_never_collide_with_table_keys() {
        let mut names = HashSet::new();
        for def in &TABLES {
            for gsi in def.gsis {
                assert!(names.insert(gsi.name), "duplicate index name {}", gsi.name);
                for attr in std::iter::once(gsi.partition_key).chain(gsi.sort_key) {
                    assert!(
                        ![PK, SK, TTL, VERSION].contains(&attr),
                        "{attr} is reserved"
                    );
                }
            }
        }
    }
}
