//! `#[derive(FromRow)]` (re-exported as `syncplane_core::FromRow`): `sqlx::FromRow` for a struct
//! whose fields are the row's columns of the same names, each field's name written once (issue
//! 33: the `from_row!` lists that repeated every struct's fields were the code base's largest
//! family of duplicates).
//!
//! - a field marked `#[row(flatten)]` is read by its own `FromRow` from the same row;
//! - a field marked `#[row(skip)]` is its type's `Default`;
//! - every other field is the column of its name (`r#type` is the column `type`).
//!
//! What `#[derive(sqlx::FromRow)]` writes for the same struct, without sqlx's proc-macro crate
//! (issue 32) or a parser crate: it reads the tokens itself, and anything but a non-generic
//! struct with named fields is a compile error that says so.
//!
//! Owns: the derive. Uses: nothing (the generated code names `::sqlx`, which every crate that
//! reads rows depends on).

use proc_macro::{Delimiter, Spacing, TokenStream, TokenTree};

/// How a field is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    Column,
    Flatten,
    Skip,
}

#[derive(Debug)]
struct Field {
    /// As written (`r#type`).
    ident: String,
    /// The column (`type`).
    column: String,
    read: Read,
}

/// `sqlx::FromRow<'_, PgRow>` for a struct with named fields (see the crate's documentation).
#[proc_macro_derive(FromRow, attributes(row))]
pub fn derive_from_row(input: TokenStream) -> TokenStream {
    match parse(input) {
        Ok((name, fields)) => expand(&name, &fields),
        Err(message) => compile_error(&message),
    }
}

/// The struct's name and fields, or why this derive cannot read it.
fn parse(input: TokenStream) -> Result<(String, Vec<Field>), String> {
    let mut tokens = input.into_iter().peekable();
    let mut name = None;
    while let Some(token) = tokens.next() {
        match token {
            TokenTree::Ident(i) if i.to_string() == "struct" => {
                name = tokens.next().map(|t| t.to_string());
                break;
            }
            TokenTree::Ident(i) if i.to_string() == "enum" || i.to_string() == "union" => {
                return Err(
                    "FromRow: only a struct with named fields can be read from a row".into(),
                );
            }
            _ => {}
        }
    }
    let name = name.ok_or("FromRow: no struct found")?;
    match tokens.next() {
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
            Ok((name, fields(g.stream())?))
        }
        Some(TokenTree::Punct(p)) if p.as_char() == '<' => {
            Err("FromRow: a generic struct is not supported".into())
        }
        _ => Err("FromRow: only a struct with named fields can be read from a row".into()),
    }
}

/// The fields of a struct's braces: each `#[attr]* vis? name: Type,`.
fn fields(body: TokenStream) -> Result<Vec<Field>, String> {
    let mut out = Vec::new();
    let mut tokens = body.into_iter().peekable();
    loop {
        let mut read = Read::Column;
        // Attributes (documentation included): `#` then a bracketed group.
        while matches!(tokens.peek(), Some(TokenTree::Punct(p)) if p.as_char() == '#') {
            tokens.next();
            let Some(TokenTree::Group(attr)) = tokens.next() else {
                return Err("FromRow: an attribute without its brackets".into());
            };
            if let Some(r) = row_attribute(attr.stream())? {
                read = r;
            }
        }
        // Visibility: `pub`, maybe with its parenthesised scope.
        if matches!(tokens.peek(), Some(TokenTree::Ident(i)) if i.to_string() == "pub") {
            tokens.next();
            if matches!(tokens.peek(), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis)
            {
                tokens.next();
            }
        }
        let Some(token) = tokens.next() else {
            return Ok(out);
        };
        let TokenTree::Ident(ident) = token else {
            return Err(format!("FromRow: expected a field's name, found `{token}`"));
        };
        match tokens.next() {
            Some(TokenTree::Punct(p)) if p.as_char() == ':' => {}
            _ => return Err(format!("FromRow: expected `:` after the field `{ident}`")),
        }
        skip_type(&mut tokens);
        let ident = ident.to_string();
        let column = ident.strip_prefix("r#").unwrap_or(&ident).to_owned();
        out.push(Field {
            ident,
            column,
            read,
        });
    }
}

/// The type after a field's `:`, up to the comma that ends the field (a comma inside `<...>` is
/// the type's own; one inside `(...)` or `[...]` is in a group already).
fn skip_type(tokens: &mut std::iter::Peekable<proc_macro::token_stream::IntoIter>) {
    let mut depth = 0usize;
    let mut previous_joint_dash = false;
    for token in tokens.by_ref() {
        if let TokenTree::Punct(p) = &token {
            match p.as_char() {
                ',' if depth == 0 => return,
                '<' => depth += 1,
                // `->` in a function pointer's type is not a closing bracket.
                '>' if !previous_joint_dash => depth = depth.saturating_sub(1),
                _ => {}
            }
            previous_joint_dash = p.as_char() == '-' && p.spacing() == Spacing::Joint;
        } else {
            previous_joint_dash = false;
        }
    }
}

/// What `#[row(...)]` says, `None` for any other attribute.
fn row_attribute(attr: TokenStream) -> Result<Option<Read>, String> {
    let mut tokens = attr.into_iter();
    match tokens.next() {
        Some(TokenTree::Ident(i)) if i.to_string() == "row" => {}
        _ => return Ok(None),
    }
    let Some(TokenTree::Group(args)) = tokens.next() else {
        return Err("FromRow: write #[row(flatten)] or #[row(skip)]".into());
    };
    match args.stream().to_string().trim() {
        "flatten" => Ok(Some(Read::Flatten)),
        "skip" => Ok(Some(Read::Skip)),
        other => Err(format!(
            "FromRow: unknown #[row({other})]: write #[row(flatten)] or #[row(skip)]"
        )),
    }
}

fn expand(name: &str, fields: &[Field]) -> TokenStream {
    let mut body = String::new();
    for f in fields {
        let field = &f.ident;
        let value = match f.read {
            Read::Column => format!("::sqlx::Row::try_get(row, {:?})?", f.column),
            Read::Flatten => "::sqlx::FromRow::from_row(row)?".to_owned(),
            Read::Skip => "::std::default::Default::default()".to_owned(),
        };
        body.push_str(&format!("{field}: {value},"));
    }
    format!(
        "#[automatically_derived]
         impl<'r> ::sqlx::FromRow<'r, ::sqlx::postgres::PgRow> for {name} {{
             fn from_row(row: &'r ::sqlx::postgres::PgRow)
                 -> ::std::result::Result<Self, ::sqlx::Error> {{
                 ::std::result::Result::Ok(Self {{ {body} }})
             }}
         }}"
    )
    .parse()
    .unwrap_or_else(|_| compile_error(&format!("FromRow: could not write the impl for {name}")))
}

/// A compile error that says `message` where the derive is used.
fn compile_error(message: &str) -> TokenStream {
    format!("compile_error!({message:?});")
        .parse()
        .unwrap_or_default()
}
