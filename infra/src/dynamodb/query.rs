//! Reads of many items: `Query` of the table or of an index (repeated until the page is
//! full, since DynamoDB applies the limit before the TTL filter), resumed from a cursor,
//! and `Scan`.

use super::client::{DynamoStore, units};
use super::errors;
use super::expr::Expr;
use super::marshal::{self, Attributes};
use crate::store::{
    Cursor, IndexQuery, Page, Query, Scan, SortKeyCondition, StoreError, now_epoch_seconds,
};
use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::types::ReturnConsumedCapacity;
use events_schema::Context;
use events_schema::tables::{PK, SK};

/// What a query asks for, whether of the table or of an index.
struct QuerySpec<'a> {
    index: Option<&'a str>,
    pk_attr: &'a str,
    sk_attr: Option<&'a str>,
    pk: &'a str,
    sort_key: Option<&'a SortKeyCondition>,
    forward: bool,
    limit: Option<usize>,
    cursor: Option<&'a Cursor>,
    consistent: bool,
    /// Attributes a cursor must carry for this query.
    cursor_attrs: Vec<&'a str>,
}

/// The key a query resumes from: the one its cursor names, which must be of the
/// queried partition; `None` without a cursor.
fn start_key(spec: &QuerySpec<'_>) -> Result<Option<Attributes>, StoreError> {
    let Some(cursor) = spec.cursor else {
        return Ok(None);
    };
    let key = cursor.to_key(&spec.cursor_attrs)?;
    if key.get(spec.pk_attr).map(String::as_str) != Some(spec.pk) {
        return Err(StoreError::Validation(
            "the cursor is not valid for this query".into(),
        ));
    }
    Ok(Some(marshal::from_string_key(key)))
}

impl DynamoStore {
    /// One `Query` request of `spec` on `table`'s table (or index), for at most `wanted`
    /// items (any number if `None`) from the key `start`; unexpired items only.
    async fn query_once(
        &self,
        table: Context,
        spec: &QuerySpec<'_>,
        wanted: Option<usize>,
        start: Option<Attributes>,
    ) -> Result<QueryOutput, StoreError> {
        let mut expr = Expr::default();
        let key_condition = expr.key_condition(spec.pk_attr, spec.pk, spec.sk_attr, spec.sort_key);
        let filter = expr.not_expired(now_epoch_seconds());
        let output = self
            .client
            .query()
            .table_name(self.table_name(table))
            .set_index_name(spec.index.map(str::to_owned))
            .key_condition_expression(key_condition)
            .filter_expression(filter)
            .set_expression_attribute_names(expr.names())
            .set_expression_attribute_values(expr.values())
            .scan_index_forward(spec.forward)
            .set_limit(wanted.map(|w| w.min(i32::MAX as usize) as i32))
            .consistent_read(spec.consistent)
            .set_exclusive_start_key(start)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        self.observe("Query", &output, |o| units(o.consumed_capacity()));
        output.map_err(errors::common)
    }

    /// Every `Query` request a page of `spec` takes.
    async fn run_query(&self, table: Context, spec: QuerySpec<'_>) -> Result<Page, StoreError> {
        if spec.limit == Some(0) {
            return Err(StoreError::Validation(
                "a query limit must be at least 1".to_owned(),
            ));
        }
        let mut start = start_key(&spec)?;
        let mut items = Vec::new();
        // DynamoDB applies Limit before the TTL filter: keep asking until the page is
        // full or the partition ends, so both backends return the same pages.
        loop {
            let wanted = spec.limit.map(|l| l - items.len());
            let output = self.query_once(table, &spec, wanted, start.take()).await?;
            for attributes in output.items.unwrap_or_default() {
                items.push(marshal::from_attributes(attributes)?);
            }
            let next = output.last_evaluated_key.filter(|k| !k.is_empty());
            let full = spec.limit.is_some_and(|l| items.len() >= l);
            match next {
                Some(key) if !full && spec.limit.is_some() => start = Some(key),
                Some(key) => {
                    let cursor = Cursor::from_key(&marshal::string_key(&key));
                    return Ok(Page {
                        items,
                        cursor: Some(cursor),
                    });
                }
                None => {
                    return Ok(Page {
                        items,
                        cursor: None,
                    });
                }
            }
        }
    }

    /// [`crate::Store::query`]: a query of the table itself.
    pub(super) async fn query_table(
        &self,
        table: Context,
        query: &Query,
    ) -> Result<Page, StoreError> {
        self.run_query(
            table,
            QuerySpec {
                index: None,
                pk_attr: PK,
                sk_attr: Some(SK),
                pk: &query.pk,
                sort_key: query.sort_key.as_ref(),
                forward: query.forward,
                limit: query.limit,
                cursor: query.cursor.as_ref(),
                consistent: query.consistent,
                cursor_attrs: vec![PK, SK],
            },
        )
        .await
    }

    /// [`crate::Store::query_index`]: a query of one of the table's indexes.
    pub(super) async fn query_gsi(
        &self,
        table: Context,
        query: &IndexQuery,
    ) -> Result<Page, StoreError> {
        let gsi = query.index_of(table)?;
        let mut cursor_attrs = vec![gsi.partition_key, PK, SK];
        cursor_attrs.extend(gsi.sort_key);
        self.run_query(
            table,
            QuerySpec {
                index: Some(gsi.name),
                pk_attr: gsi.partition_key,
                sk_attr: gsi.sort_key,
                pk: &query.pk,
                sort_key: query.sort_key.as_ref(),
                forward: query.forward,
                limit: query.limit,
                cursor: query.cursor.as_ref(),
                consistent: false,
                cursor_attrs,
            },
        )
        .await
    }

    /// [`crate::Store::scan`]: one `Scan` page of the table or an index.
    pub(super) async fn scan_table(&self, table: Context, scan: &Scan) -> Result<Page, StoreError> {
        if scan.limit == Some(0) {
            return Err(StoreError::Validation(
                "a scan limit must be at least 1".to_owned(),
            ));
        }
        scan.index_of(table)?;
        let start = match &scan.cursor {
            Some(cursor) => Some(marshal::from_string_key(cursor.to_key(&[PK, SK])?)),
            None => None,
        };
        let output = self
            .client
            .scan()
            .table_name(self.table_name(table))
            .set_index_name(scan.index.clone())
            .set_limit(scan.limit.map(|l| l.min(i32::MAX as usize) as i32))
            // Index reads cannot be strongly consistent; table reads are, so a scan
            // right after a write sees it.
            .consistent_read(scan.index.is_none())
            .set_exclusive_start_key(start)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        self.observe("Scan", &output, |o| units(o.consumed_capacity()));
        let output = output.map_err(errors::common)?;
        let items = output
            .items
            .unwrap_or_default()
            .into_iter()
            .map(marshal::from_attributes)
            .collect::<Result<Vec<_>, _>>()?;
        let cursor = output
            .last_evaluated_key
            .filter(|k| !k.is_empty())
            .map(|key| Cursor::from_key(&marshal::string_key(&key)));
        Ok(Page { items, cursor })
    }
}
