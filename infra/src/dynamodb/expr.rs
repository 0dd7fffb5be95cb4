//! Expression building: the port's conditions, updates and key conditions become
//! DynamoDB expressions with `#name` and `:value` placeholders, so no attribute name or
//! value is ever spliced into expression text.

use super::marshal;
use crate::store::{Condition, SortKeyCondition, StoreError, Update};
use aws_sdk_dynamodb::types::AttributeValue;
use events_schema::tables::{PK, TTL, VERSION};
use std::collections::HashMap;

/// Placeholders collected while building one request's expressions.
#[derive(Debug, Default)]
pub(super) struct Expr {
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
}

impl Expr {
    pub fn name(&mut self, attr: &str) -> String {
        if let Some((placeholder, _)) = self.names.iter().find(|(_, a)| a.as_str() == attr) {
            return placeholder.clone();
        }
        let placeholder = format!("#n{}", self.names.len());
        self.names.insert(placeholder.clone(), attr.to_owned());
        placeholder
    }

    pub fn value(&mut self, value: AttributeValue) -> String {
        let placeholder = format!(":v{}", self.values.len());
        self.values.insert(placeholder.clone(), value);
        placeholder
    }

    fn json_value(&mut self, value: &serde_json::Value) -> Result<String, StoreError> {
        Ok(self.value(marshal::attribute(value)?))
    }

    /// The condition as an expression; `None` when it always holds.
    pub fn condition(&mut self, condition: &Condition) -> Result<Option<String>, StoreError> {
        Ok(Some(match condition {
            Condition::ItemExists => format!("attribute_exists({})", self.name(PK)),
            Condition::ItemNotExists => format!("attribute_not_exists({})", self.name(PK)),
            Condition::AttributeExists(attr) => format!("attribute_exists({})", self.name(attr)),
            Condition::AttributeNotExists(attr) => {
                format!("attribute_not_exists({})", self.name(attr))
            }
            Condition::AttributeEquals(attr, value) => {
                format!("{} = {}", self.name(attr), self.json_value(value)?)
            }
            Condition::VersionEquals(version) => {
                let value = self.value(AttributeValue::N(version.to_string()));
                format!("{} = {value}", self.name(VERSION))
            }
            Condition::Newer { attr, version } => {
                let name = self.name(attr);
                let value = self.value(AttributeValue::N(version.to_string()));
                format!("attribute_not_exists({name}) OR {name} < {value}")
            }
            Condition::All(all) => {
                let mut parts = Vec::new();
                for c in all {
                    if let Some(part) = self.condition(c)? {
                        parts.push(format!("({part})"));
                    }
                }
                if parts.is_empty() {
                    return Ok(None);
                }
                parts.join(" AND ")
            }
        }))
    }

    /// `SET ... REMOVE ... ADD ...`; `None` when the update changes nothing.
    pub fn update(&mut self, update: &Update) -> Result<Option<String>, StoreError> {
        let mut sets = Vec::new();
        for (attr, value) in &update.set {
            sets.push(format!("{} = {}", self.name(attr), self.json_value(value)?));
        }
        let removes: Vec<String> = update.remove.iter().map(|attr| self.name(attr)).collect();
        let mut adds = Vec::new();
        for (attr, by) in &update.add {
            adds.push(format!(
                "{} {}",
                self.name(attr),
                self.json_value(&(*by).into())?
            ));
        }
        let mut clauses = Vec::new();
        if !sets.is_empty() {
            clauses.push(format!("SET {}", sets.join(", ")));
        }
        if !removes.is_empty() {
            clauses.push(format!("REMOVE {}", removes.join(", ")));
        }
        if !adds.is_empty() {
            clauses.push(format!("ADD {}", adds.join(", ")));
        }
        Ok((!clauses.is_empty()).then(|| clauses.join(" ")))
    }

    /// `<pk attr> = :pk [AND <sort key condition>]`.
    pub fn key_condition(
        &mut self,
        pk_attr: &str,
        pk: &str,
        sk_attr: Option<&str>,
        condition: Option<&SortKeyCondition>,
    ) -> String {
        let pk_part = format!(
            "{} = {}",
            self.name(pk_attr),
            self.value(AttributeValue::S(pk.to_owned()))
        );
        let (Some(sk_attr), Some(condition)) = (sk_attr, condition) else {
            return pk_part;
        };
        let sk = self.name(sk_attr);
        let mut v = |s: &str| self.value(AttributeValue::S(s.to_owned()));
        let sk_part = match condition {
            SortKeyCondition::Equals(s) => format!("{sk} = {}", v(s)),
            SortKeyCondition::BeginsWith(s) => format!("begins_with({sk}, {})", v(s)),
            SortKeyCondition::Between(lo, hi) => {
                let (lo, hi) = (v(lo), v(hi));
                format!("{sk} BETWEEN {lo} AND {hi}")
            }
            SortKeyCondition::LessThan(s) => format!("{sk} < {}", v(s)),
            SortKeyCondition::LessOrEqual(s) => format!("{sk} <= {}", v(s)),
            SortKeyCondition::GreaterThan(s) => format!("{sk} > {}", v(s)),
            SortKeyCondition::GreaterOrEqual(s) => format!("{sk} >= {}", v(s)),
        };
        format!("{pk_part} AND {sk_part}")
    }

    /// A filter that keeps items whose TTL has not passed: no TTL attribute, a
    /// non-numeric one, or one after `now` (the embedded backend's rule too).
    pub fn not_expired(&mut self, now: i64) -> String {
        let ttl = self.name(TTL);
        let n = self.value(AttributeValue::S("N".to_owned()));
        let now = self.value(AttributeValue::N(now.to_string()));
        format!("attribute_not_exists({ttl}) OR NOT attribute_type({ttl}, {n}) OR {ttl} > {now}")
    }

    pub fn names(&self) -> Option<HashMap<String, String>> {
        (!self.names.is_empty()).then(|| self.names.clone())
    }

    pub fn values(&self) -> Option<HashMap<String, AttributeValue>> {
        (!self.values.is_empty()).then(|| self.values.clone())
    }
}

/// The key of an item as DynamoDB attributes.
pub(super) fn key_attributes(key: &crate::store::Key) -> HashMap<String, AttributeValue> {
    HashMap::from([
        (PK.to_owned(), AttributeValue::S(key.pk.clone())),
        (
            events_schema::tables::SK.to_owned(),
            AttributeValue::S(key.sk.clone()),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_placeholders_and_reused() {
        let mut expr = Expr::default();
        let text = expr
            .condition(&Condition::All(vec![
                Condition::ItemExists,
                Condition::VersionEquals(3),
                Condition::AttributeEquals("status".into(), serde_json::json!("a b")),
                Condition::All(vec![]),
            ]))
            .expect("valid");
        assert_eq!(
            text.as_deref(),
            Some("(attribute_exists(#n0)) AND (#n1 = :v0) AND (#n2 = :v1)")
        );
        assert_eq!(expr.name(PK), "#n0");
        assert_eq!(expr.values().map(|v| v.len()), Some(2));
    }

    #[test]
    fn empty_all_is_no_condition() {
        assert_eq!(
            Expr::default()
                .condition(&Condition::All(vec![]))
                .expect("valid"),
            None
        );
    }
}
