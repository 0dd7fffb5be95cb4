//! The OpenAPI shapes that most operations of the API share, as attributes that expand
//! to utoipa's `#[utoipa::path(...)]` with the shared parts filled in, so each handler
//! names only what is its own (its path, tag, parameters, body and answers) and every
//! read or write of the caller's things is documented alike:
//!
//! - [`macro@read`]: a signed-in `GET` answering a view with its `ETag`, or `304`.
//! - [`macro@write`]: a signed-in change that takes an `Idempotency-Key`.
//!
//! Each reads its arguments as `name = value` or `name(...)` and copies the values into
//! the expansion as they are written; it checks only which names it was given. utoipa
//! checks the rest (the types, the paths, the responses), and the committed OpenAPI
//! document's drift test checks the outcome. The expansion names the shared parts by
//! `crate::http::responses::...`: these attributes are for the `vitals` crate's routes.

use proc_macro::{Delimiter, TokenStream, TokenTree};
use std::collections::BTreeMap;

/// A signed-in read: `GET path` with the bearer token, the `If-None-Match` header after
/// `params(...)` (if any), `200` with `body` described by `ok` and its `ETag`, `304`, and
/// the responses of `errors(...)`.
///
/// ```ignore
/// #[read(path = "/v1/me/sleep", tag = "sleep", params(HistoryQuery),
///        ok = "A page of sessions.", body = Page<SleepView>, errors(responses::QueryErrors))]
/// ```
#[proc_macro_attribute]
pub fn read(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(
        attr,
        item,
        &[],
        &["path", "tag", "ok", "body", "errors"],
        |args| {
            format!(
                "get, path = {path}, tag = {tag}, security((\"bearer\" = [])), \
             params({params}crate::http::responses::IfNoneMatch), \
             responses((status = 200, description = {ok}, body = {body}, \
             headers((\"ETag\" = String, description = \"The representation's tag.\"))), \
             (status = 304, response = crate::http::responses::NotModified), {errors})",
                path = args.value("path"),
                tag = args.value("tag"),
                params = args.list("params"),
                ok = args.value("ok"),
                body = args.value("body"),
                errors = args.value("errors"),
            )
        },
    )
}

/// A signed-in change: `method path` with the bearer token, the `Idempotency-Key` header
/// after `params(...)` (if any), the JSON `body` (if any) and the answers of
/// `responses(...)`.
///
/// ```ignore
/// #[write(delete, path = "/v1/me/meals/{id}", tag = "nutrition",
///         params(("id" = String, Path, description = "The meal's id.")),
///         responses((status = 204, description = "Deleted."), responses::ReadErrors))]
/// ```
#[proc_macro_attribute]
pub fn write(attr: TokenStream, item: TokenStream) -> TokenStream {
    let methods = ["post", "put", "patch", "delete"];
    expand(
        attr,
        item,
        &methods,
        &["path", "tag", "responses"],
        |args| {
            let body = match args.named.get("body") {
                Some(body) => format!("request_body = {body}, "),
                None => String::new(),
            };
            format!(
                "{method}, path = {path}, tag = {tag}, security((\"bearer\" = [])), \
             params({params}crate::http::responses::IdempotencyKey), {body}\
             responses({responses})",
                method = args.method.as_deref().unwrap_or_default(),
                path = args.value("path"),
                tag = args.value("tag"),
                params = args.list("params"),
                responses = args.value("responses"),
            )
        },
    )
}

/// An attribute's arguments: the bare word (a method), and each `name = value` or
/// `name(value)`, the value as written.
struct Args {
    method: Option<String>,
    named: BTreeMap<String, String>,
}

impl Args {
    fn value(&self, name: &str) -> &str {
        self.named.get(name).map(String::as_str).unwrap_or_default()
    }

    /// A list's items followed by a comma, so more can follow; nothing when absent.
    fn list(&self, name: &str) -> String {
        match self.named.get(name) {
            Some(items) if !items.trim().is_empty() => {
                format!("{}, ", items.trim().trim_end_matches(','))
            }
            _ => String::new(),
        }
    }
}

/// Parses `attr`, checks it names a method of `methods` (when there are any) and every
/// name of `required`, and puts `#[utoipa::path(<template(args)>)]` on `item`; or a
/// compile error saying what is wrong.
fn expand(
    attr: TokenStream,
    item: TokenStream,
    methods: &[&str],
    required: &[&str],
    template: impl Fn(&Args) -> String,
) -> TokenStream {
    let checked = parse(attr).and_then(|args| {
        let method_ok = match &args.method {
            Some(method) => methods.contains(&method.as_str()),
            None => methods.is_empty(),
        };
        if !method_ok {
            return Err(format!("the method must be one of {methods:?}"));
        }
        match required
            .iter()
            .find(|name| !args.named.contains_key(**name))
        {
            Some(missing) => Err(format!("`{missing}` is required")),
            None => Ok(args),
        }
    });
    let attribute = match checked {
        Ok(args) => format!("#[utoipa::path({})]", template(&args)),
        Err(message) => format!("::core::compile_error!({message:?});"),
    };
    // The values were tokens already, so the whole parses again; were it not to, the
    // item must not compile undocumented.
    let unparsed = "::core::compile_error!(\"the expanded attribute does not parse\");";
    let mut out: TokenStream = attribute
        .parse()
        .or_else(|_| unparsed.parse())
        .unwrap_or_default();
    out.extend(item);
    out
}

/// Splits an attribute's arguments at its top-level commas.
fn parse(attr: TokenStream) -> Result<Args, String> {
    let mut args = Args {
        method: None,
        named: BTreeMap::new(),
    };
    let mut segments = vec![Vec::new()];
    for token in attr {
        match &token {
            TokenTree::Punct(p) if p.as_char() == ',' => segments.push(Vec::new()),
            _ => {
                if let Some(segment) = segments.last_mut() {
                    segment.push(token);
                }
            }
        }
    }
    for segment in segments.into_iter().filter(|s| !s.is_empty()) {
        let mut tokens = segment.into_iter();
        let Some(TokenTree::Ident(name)) = tokens.next() else {
            return Err("each argument starts with a name".into());
        };
        let name = name.to_string();
        let rest: Vec<TokenTree> = tokens.collect();
        let value = match rest.as_slice() {
            [] => {
                if args.method.replace(name.clone()).is_some() {
                    return Err(format!("a second bare word `{name}`"));
                }
                continue;
            }
            [TokenTree::Group(group)] if group.delimiter() == Delimiter::Parenthesis => {
                group.stream().to_string()
            }
            [TokenTree::Punct(eq), value @ ..] if eq.as_char() == '=' && !value.is_empty() => {
                value.iter().cloned().collect::<TokenStream>().to_string()
            }
            _ => return Err(format!("`{name}` takes `= value` or `(...)`")),
        };
        if args.named.insert(name.clone(), value).is_some() {
            return Err(format!("`{name}` is given twice"));
        }
    }
    Ok(args)
}
