//! The nine bounded contexts. Each owns exactly one table and publishes its own topic.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Context {
    Identity,
    Nutrition,
    Activity,
    Sleep,
    Goals,
    Integrations,
    Environment,
    Insights,
    Dashboard,
}

impl Context {
    pub const ALL: [Context; 9] = [
        Context::Identity,
        Context::Nutrition,
        Context::Activity,
        Context::Sleep,
        Context::Goals,
        Context::Integrations,
        Context::Environment,
        Context::Insights,
        Context::Dashboard,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Context::Identity => "identity",
            Context::Nutrition => "nutrition",
            Context::Activity => "activity",
            Context::Sleep => "sleep",
            Context::Goals => "goals",
            Context::Integrations => "integrations",
            Context::Environment => "environment",
            Context::Insights => "insights",
            Context::Dashboard => "dashboard",
        }
    }
}

impl fmt::Display for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name is not one of the nine contexts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown context {0:?}")]
pub struct UnknownContext(pub String);

impl FromStr for Context {
    type Err = UnknownContext;
    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        Context::ALL
            .into_iter()
            .find(|c| c.as_str() == raw)
            .ok_or_else(|| UnknownContext(raw.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for context in Context::ALL {
            assert_eq!(context.as_str().parse::<Context>(), Ok(context));
            let json = serde_json::to_string(&context).expect("serialize");
            assert_eq!(json, format!("\"{}\"", context.as_str()));
        }
        assert!("billing".parse::<Context>().is_err());
    }
}
