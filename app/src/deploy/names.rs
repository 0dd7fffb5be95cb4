//! The logical ids of the template's resources that more than one part of it refers
//! to (the tables, the streams, the projector functions).

use events_schema::Context;

/// The logical-id form of a context: `Identity`.
pub fn pascal(context: Context) -> String {
    let name = context.to_string();
    let mut chars = name.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

pub fn table_id(context: Context) -> String {
    format!("{}Table", pascal(context))
}

pub fn stream_id(context: Context) -> String {
    format!("{}Stream", pascal(context))
}

/// The projector function writing `target`'s table: `DashboardProjector`.
pub fn consumer_id(target: Context) -> String {
    format!("{}Projector", pascal(target))
}
