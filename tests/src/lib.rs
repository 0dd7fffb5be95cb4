//! Shared test support for Vitals: the storage conformance suite (one body of test
//! code, run against every backend), backend constructors for tests, and helpers.
//!
//! Layout:
//! - [`backends`]: builds a fresh embedded store or a DynamoDB store on the emulator.
//! - [`conformance`]: the storage port's specification, as async test functions.
//! - [`conformance_suite!`]: expands to one `#[tokio::test]` per conformance case.
//! - [`fixtures`]: the projector fixture harness (`tests/fixtures/*.json`).
//! - [`folded_cases`]: the live-safe fold view's writes against a backend's conditions.
//! - [`fuzz`]: the runtime and store the property tests share across their cases.
//! - [`commands`]: the command handlers' specifications; [`commands_suite!`] expands
//!   them per backend.
//! - [`model`]: the model-based test: random histories through the real handlers and
//!   projectors, compared with a reference model.
//! - [`history_pages`]: the history screens paged through two years of data.
//! - [`pipeline`]: the in-process pipeline on a fresh embedded store, and waits on what
//!   its workers project.
//! - [`nightly`]: the nightly readiness job on a clock the test controls;
//!   [`nightly_suite!`] expands it per backend.
//! - [`corpus`]: the scenario that writes the stored-event corpus.
//! - [`store_histories`]: the keys and seeded stores of the store views' random histories.
//! - [`snapshot`]: every item of a store, for whole-store comparisons.
//! - [`sqs_polls`]: SQS as a pass over a queue may meet it (a short poll answered empty,
//!   messages reappearing at once), as an SDK interceptor.
//! - [`regressions`]: the defects a review found, each as a specification that must hold
//!   on every backend; [`regressions_suite!`] expands them.
//! - [`kinesis_batches`]: a store's changes as the Kinesis batches a projector function
//!   receives.
//! - [`instants`]: nights across clock changes and weeks at either end of the world, on a
//!   manual clock; [`instants_suite!`] expands them per backend.

pub mod access;
pub mod backends;
pub mod commands;
pub mod conformance;
pub mod corpus;
pub mod faults;
pub mod fixtures;
pub mod folded_cases;
pub mod fuzz;
pub mod history_pages;
pub mod instants;
pub mod kinesis_batches;
pub mod model;
pub mod nightly;
pub mod pipeline;
pub mod regressions;
pub mod snapshot;
pub mod sqs_polls;
pub mod store_histories;
pub mod workload;

/// Expands to one test per command specification, each on a fresh backend from `$make`.
#[macro_export]
macro_rules! commands_suite {
    ($make:path) => {
        $crate::recorded_spec_tests!($make, $crate::commands::identity;
            register_writes_profile_reservation_and_event,
            register_with_a_taken_email_fails_and_writes_nothing,
            racing_sign_ups_of_one_email_create_one_account,
            a_sign_up_cancelled_as_a_conflict_is_tried_again,
            sessions_cancelled_as_a_conflict_go_through_on_the_next_attempt,
            a_refresh_token_presented_twice_at_once_ends_its_session,
            a_sign_in_whose_credentials_changed_before_its_session_is_refused,
            a_session_started_while_the_password_or_email_changes_ends_with_the_others,
            profile_changes_cancelled_as_a_conflict_commit_on_the_next_attempt,
            register_repeated_with_the_same_key_returns_the_same_user,
            register_rejects_invalid_input_naming_the_field,
            login_checks_email_and_password,
            change_email_moves_the_reservation,
            change_email_to_a_taken_email_changes_nothing,
            an_email_change_another_process_made_first_is_answered_as_a_replay,
            update_profile_publishes_once_per_change,
            deletion_request_refuses_login_and_publishes_once,
            an_email_change_or_a_deletion_takes_the_current_password,
            access_tokens_hold_until_the_credentials_change,
            a_credentials_tries_are_counted_by_every_process_together,
        );
        $crate::recorded_spec_tests!($make, $crate::commands::nutrition;
            log_meal_writes_meal_summary_and_event,
            log_meal_costs_one_read_and_one_transaction,
            log_meal_repeated_with_the_same_key_writes_nothing,
            edit_meal_within_a_day_updates_the_summary,
            edit_meal_to_another_day_moves_it_and_both_summaries,
            delete_meal_takes_it_out_of_the_summary,
            meal_validation_names_the_field_and_writes_nothing,
            concurrent_writers_keep_every_summary_equal_to_its_meals,
            a_meal_that_loses_the_race_for_its_summary_is_logged_on_the_fresh_one,
            a_meal_committing_after_the_erasure_began_is_refused_whole,
            a_meal_cancelled_as_a_conflict_is_logged_on_a_fresh_read,
            a_keyed_meal_whose_record_met_a_conflict_is_logged_on_the_next_attempt,
            scheduled_meals_and_the_catalog,
            a_catalog_event_is_recorded_by_the_handlers_clock,
            a_scheduled_meal_is_eaten_once,
            plans_and_the_catalog_cancelled_as_a_conflict_are_written_on_the_next_attempt,
        );
        $crate::recorded_spec_tests!($make, $crate::commands::activity_sleep;
            record_workout_writes_workout_and_event_once_per_key,
            a_workout_cancelled_as_a_conflict_is_recorded_on_the_next_attempt,
            retried_wearable_sync_returns_the_original_workout_in_one_request,
            one_record_synced_by_two_processes_at_once_is_one_workout,
            a_first_sync_cancelled_as_a_conflict_writes_again,
            a_later_sync_cancelled_as_a_conflict_commits_on_the_next_attempt,
            wearable_sync_with_changed_fields_is_the_next_version,
            a_later_revision_with_the_same_content_moves_only_the_revision,
            training_block_started,
            a_training_block_ends_early_once,
            ending_a_block_cancelled_as_a_conflict_ends_it_on_the_next_attempt,
            sleep_sessions_recorded_and_synced_idempotently,
        );
        $crate::recorded_spec_tests!($make, $crate::commands::goals;
            created_goal_is_active_and_in_the_index,
            status_changes_move_the_goal_between_index_partitions,
            a_status_change_cancelled_as_a_conflict_commits_on_the_next_attempt,
        );
        $crate::recorded_spec_tests!($make, $crate::commands::integrations;
            oauth_connect_uses_a_single_use_state,
            an_expired_state_cannot_complete,
            a_connect_completes_only_for_the_account_that_started_it,
            a_code_issued_for_another_connect_completes_nothing,
            signed_webhooks_are_recorded_once,
            a_webhook_racing_a_disconnect_goes_where_its_provider_user_routes_at_commit,
            a_disconnect_cancelled_as_a_conflict_commits_on_the_next_attempt,
            a_connect_and_a_webhook_cancelled_as_a_conflict_go_through_on_the_next_attempt,
            disconnect_removes_the_connection_once,
            a_connection_stored_before_versions_disconnects_and_reconnects,
            environment_readings_are_cached_per_cell_and_hour,
        );
        $crate::recorded_spec_tests!($make, $crate::commands::environment;
            a_past_hour_is_asked_of_the_provider_once,
        );
        $crate::recorded_spec_tests!($make, $crate::commands::keyed;
            keyed_activity_and_goal_commands_met_by_a_conflict_commit_on_the_next_attempt,
            keyed_meal_changes_met_by_a_conflict_commit_on_the_next_attempt,
            keyed_account_and_connection_changes_met_by_a_conflict_commit_on_the_next_attempt,
            commands_whose_erasure_check_met_a_conflict_commit_on_the_next_attempt,
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! spec_tests {
    ($make:path, $module:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                use $module as spec;
                let backend = $make().await;
                spec::$name(backend.store.clone()).await;
            }
        )*
    };
}

/// As [`spec_tests!`], the handlers of every world the spec builds recorded against the
/// declared access patterns (`commands::RECORDING`): a call no pattern declares, or an
/// item no kind declares, fails the spec.
#[macro_export]
macro_rules! recorded_spec_tests {
    ($make:path, $module:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                use $module as spec;
                let backend = $make().await;
                let recorded = $crate::access::recording(
                    backend.store.clone(),
                    $crate::access::catalog(),
                );
                $crate::commands::RECORDING
                    .scope(recorded.clone(), spec::$name(backend.store.clone()))
                    .await;
                $crate::access::finish(&recorded, "commands");
            }
        )*
    };
}

/// Expands to one test per conformance case, each on a fresh backend from `$make`
/// (an async fn returning a [`backends::TestBackend`]).
#[macro_export]
macro_rules! conformance_suite {
    ($make:path) => {
        $crate::conformance_item_cases!($make);
        $crate::conformance_tests!($make;
            bad_cursors_and_limits_are_rejected,
            sparse_index_membership_follows_the_key_attribute,
            index_pagination_and_sort_conditions,
            hash_only_index_is_queried_by_partition,
            expired_items_are_never_returned,
            drain_leaves_nothing_in_table_or_index,
            scan_reads_every_item_of_table_and_index_once,
        );
    };
}

/// The conformance cases that need neither an index query nor a scan: every case but
/// seven. A store that serves neither (the buffered view of a rebuild) runs these.
#[macro_export]
macro_rules! conformance_item_cases {
    ($make:path) => {
        $crate::conformance_tests!($make;
            put_then_get_round_trips_every_value_type,
            get_of_a_missing_item_is_none,
            put_if_absent_fails_the_second_time_and_keeps_the_first,
            version_guarded_update_accepts_the_current_version_only,
            update_creates_a_missing_item_and_removes_attributes,
            an_update_adds_to_a_number_atomically_under_its_condition,
            key_attributes_cannot_be_updated,
            conditional_delete_returns_the_old_item,
            attribute_conditions_and_their_conjunction,
            newer_guard_keeps_the_highest_version_whatever_the_order,
            items_without_valid_keys_are_rejected,
            transaction_applies_every_action,
            transaction_with_one_failing_condition_writes_nothing,
            transaction_reports_a_failed_condition_check,
            transaction_limits_are_enforced,
            query_sort_key_conditions_forward_and_reverse,
            sort_order_is_by_utf8_bytes,
            pagination_returns_every_item_exactly_once,
            index_key_attribute_must_be_a_string,
            concurrent_version_guarded_writers_lose_no_update,
            batch_writes_put_and_delete_many_items,
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

/// Expands to one test per specification of the nightly readiness job ([`nightly`]),
/// each on a fresh backend from `$make`.
#[macro_export]
macro_rules! nightly_suite {
    ($make:path) => {
        $crate::spec_tests!($make, $crate::nightly;
            scores_active_users_once_their_day_has_ended,
            goes_on_from_where_a_stopped_run_left_the_day,
            keeps_no_erased_users_place_in_a_checkpoint,
            scores_activity_recorded_after_the_day_was_finished,
        );
    };
}

/// Expands to one test per regression specification, each on a fresh backend from `$make`.
/// Expands to one test per specification of [`instants`] (days, weeks and clock
/// changes), each on a fresh backend from `$make`.
#[macro_export]
macro_rules! instants_suite {
    ($make:path) => {
        $crate::spec_tests!($make, $crate::instants;
            a_night_across_a_clock_change_lasts_what_it_lasted,
            a_weekly_goal_counts_the_users_own_iso_week,
        );
    };
}

#[macro_export]
macro_rules! regressions_suite {
    ($make:path) => {
        $crate::spec_tests!($make, $crate::regressions;
            goal_progress_follows_a_deleted_and_logged_again_meal,
            a_corrected_synced_sleep_session_shows_in_every_delivery_order,
            an_older_wearable_payload_never_overwrites_a_newer_one,
            an_erased_users_redelivered_event_sweeps_what_a_crash_left,
            a_dead_letter_put_after_the_users_erasure_is_dropped,
            an_erasers_retried_publication_leaves_no_event_behind,
            an_unreadable_stored_pointer_is_an_internal_error,
            a_stale_progress_recompute_never_lands_last,
            a_recompute_with_nothing_to_change_still_stops_a_stale_one,
            a_stale_daily_activity_recompute_never_lands_last,
            a_provider_identity_belongs_to_one_account_at_a_time,
            erasing_an_account_never_deletes_anothers_pointer,
            one_users_concurrent_meal_logs_all_succeed,
            a_sign_up_record_goes_with_the_email,
            a_dashboard_past_one_page_of_rows_shows_every_kind,
            goals_are_listed_page_by_page,
        );
    };
}
