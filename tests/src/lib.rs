//! Shared test support for Vitals: the storage conformance suite (one body of test
//! code, run against every backend), backend constructors for tests, and helpers.
//!
//! Layout:
//! - [`backends`]: builds a fresh embedded store or a DynamoDB store on the emulator.
//! - [`conformance`]: the storage port's specification, as async test functions.
//! - [`conformance_suite!`]: expands to one `#[tokio::test]` per conformance case.

pub mod backends;
pub mod conformance;

/// Expands to one test per conformance case, each on a fresh backend from `$make`
/// (an async fn returning a [`backends::TestBackend`]).
#[macro_export]
macro_rules! conformance_suite {
    ($make:path) => {
        $crate::conformance_tests!($make;
            put_then_get_round_trips_every_value_type,
            get_of_a_missing_item_is_none,
            put_if_absent_fails_the_second_time_and_keeps_the_first,
            version_guarded_update_accepts_the_current_version_only,
            update_creates_a_missing_item_and_removes_attributes,
            key_attributes_cannot_be_updated,
            conditional_delete_returns_the_old_item,
            attribute_conditions_and_their_conjunction,
            items_without_valid_keys_are_rejected,
            transaction_applies_every_action,
            transaction_with_one_failing_condition_writes_nothing,
            transaction_reports_a_failed_condition_check,
            transaction_limits_are_enforced,
            query_sort_key_conditions_forward_and_reverse,
            sort_order_is_by_utf8_bytes,
            pagination_returns_every_item_exactly_once,
            bad_cursors_and_limits_are_rejected,
            sparse_index_membership_follows_the_key_attribute,
            index_pagination_and_sort_conditions,
            hash_only_index_is_queried_by_partition,
            index_key_attribute_must_be_a_string,
            expired_items_are_never_returned,
            drain_leaves_nothing_in_table_or_index,
            concurrent_version_guarded_writers_lose_no_update,
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! conformance_tests {
    ($make:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let backend = $make().await;
                $crate::conformance::$name(backend.store.clone()).await;
            }
        )*
    };
}
