//! Which arguments the body certainly consumes, read from its syntax.
//!
//! A fallback that is given the arguments (`fallback = cached`), or a closure
//! that uses them (`fallback = |error| cached(&req, error)`), runs after the
//! body; an argument the body consumed is gone by then. rustc reports that as
//! "use of moved value" inside the generated code. To say instead what to do,
//! the expansion asks, for each argument found here, that its type be `Copy`
//! (the only case in which such a use is fine) through a trait whose
//! `#[diagnostic::on_unimplemented]` message names the argument and the
//! fallback.
//!
//! The reading is deliberately narrow: a use counts only where it moves a
//! value that is not `Copy` whatever the types are (an argument of a call, a
//! `let` initialiser, a struct field, `return`, `?`, `.await`, a `for` loop's
//! iterator, anything inside a `move` closure or `async move` block). A
//! method's receiver (`req.send()`), a `match` scrutinee, an operand and a
//! macro's tokens are left out, since they may only borrow; such a move is
//! still reported, in rustc's words. An argument whose name the body binds
//! again (shadowing) is left out too.

use std::collections::BTreeSet;

use proc_macro2::Ident;
use syn::visit::{self, Visit};
use syn::{Block, Expr, Local, Pat};

/// The names among `arguments` that `body` moves. `self` is named `self`.
pub fn consumed(body: &Block, arguments: &[Ident]) -> Vec<Ident> {
    let mut finder = Finder::default();
    finder.visit_block(body);
    arguments
        .iter()
        .filter(|argument| {
            let name = argument.to_string();
            finder.moved.contains(&name) && !finder.bound.contains(&name)
        })
        .cloned()
        .collect()
}

#[derive(Default)]
struct Finder {
    /// Names used where they are moved.
    moved: BTreeSet<String>,
    /// Names the body binds itself.
    bound: BTreeSet<String>,
    /// Inside a `move` closure or an `async move` block, where every use of
    /// a name moves it.
    in_move: usize,
}

impl Finder {
    /// `expr` sits where a value is moved.
    fn moves(&mut self, expr: &Expr) {
        if let Some(name) = bare_name(expr) {
            self.moved.insert(name);
        }
    }
}

/// `req`, `(req)` or `self`, as a whole expression.
fn bare_name(expr: &Expr) -> Option<String> {
    match expr {
        // A qualified path (`<T>::req`) has a leading `::` or more than one
        // segment: never a bare name.
        Expr::Path(path) => path.path.get_ident().map(ToString::to_string),
        Expr::Paren(inner) => bare_name(&inner.expr),
        Expr::Group(inner) => bare_name(&inner.expr),
        _ => None,
    }
}

impl<'ast> Visit<'ast> for Finder {
    fn visit_expr(&mut self, expr: &'ast Expr) {
        if self.in_move > 0 {
            self.moves(expr);
        }
        match expr {
            Expr::Call(call) => call.args.iter().for_each(|arg| self.moves(arg)),
            Expr::MethodCall(call) => call.args.iter().for_each(|arg| self.moves(arg)),
            Expr::Struct(object) => object.fields.iter().for_each(|f| self.moves(&f.expr)),
            Expr::Tuple(tuple) => tuple.elems.iter().for_each(|e| self.moves(e)),
            Expr::Array(array) => array.elems.iter().for_each(|e| self.moves(e)),
            Expr::Assign(assign) => self.moves(&assign.right),
            Expr::Return(ret) => ret.expr.iter().for_each(|e| self.moves(e)),
            Expr::Break(brk) => brk.expr.iter().for_each(|e| self.moves(e)),
            Expr::Try(try_) => self.moves(&try_.expr),
            Expr::Await(await_) => self.moves(&await_.base),
            Expr::ForLoop(for_) => self.moves(&for_.expr),
            _ => {}
        }
        let moving = match expr {
            Expr::Closure(closure) => closure.capture.is_some(),
            Expr::Async(block) => block.capture.is_some(),
            _ => false,
        };
        self.in_move += usize::from(moving);
        visit::visit_expr(self, expr);
        self.in_move -= usize::from(moving);
    }

    fn visit_local(&mut self, local: &'ast Local) {
        if let Some(init) = &local.init {
            // `let _ = req;` does not move `req`.
            if !matches!(local.pat, Pat::Wild(_)) {
                self.moves(&init.expr);
            }
        }
        visit::visit_local(self, local);
    }

    fn visit_pat_ident(&mut self, pat: &'ast syn::PatIdent) {
        self.bound.insert(pat.ident.to_string());
        visit::visit_pat_ident(self, pat);
    }

    // Items nested in the body have their own scope.
    fn visit_item(&mut self, _: &'ast syn::Item) {}

    // A macro's tokens are not read.
    fn visit_macro(&mut self, _: &'ast syn::Macro) {}
}

/// The names among `arguments` that `expr` mentions (a closure's body, say).
pub fn mentioned(expr: &Expr, arguments: &[Ident]) -> Vec<Ident> {
    #[derive(Default)]
    struct Names(BTreeSet<String>);
    impl<'ast> Visit<'ast> for Names {
        fn visit_expr_path(&mut self, path: &'ast syn::ExprPath) {
            if let Some(ident) = path.path.get_ident() {
                self.0.insert(ident.to_string());
            }
            visit::visit_expr_path(self, path);
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut names = Names::default();
    names.visit_expr(expr);
    arguments
        .iter()
        .filter(|argument| names.0.contains(&argument.to_string()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::Span;

    fn consumed_in(body: &str, arguments: &[&str]) -> Vec<String> {
        let body: Block = syn::parse_str(body).unwrap();
        let arguments: Vec<Ident> = arguments
            .iter()
            .map(|name| Ident::new(name, Span::call_site()))
            .collect();
        consumed(&body, &arguments)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn moving_positions_are_found() {
        for body in [
            "{ send(req) }",
            "{ client.send(req) }",
            "{ let r = req; Ok(r) }",
            "{ let r: Request = (req); Ok(r) }",
            "{ Ok(Wrapper { inner: req }) }",
            "{ Ok((req, 1)) }",
            "{ Ok([req]) }",
            "{ let mut r = None; r = Some(1); x = req; Ok(r) }",
            "{ return req; }",
            "{ loop { break req; } }",
            "{ req?; Ok(()) }",
            "{ req.await }",
            "{ for x in req { } Ok(()) }",
            "{ std::thread::spawn(move || req.len()); Ok(()) }",
            "{ tokio::spawn(async move { req.len() }); Ok(()) }",
            "{ if a { Ok(1) } else { send(req) } }",
            "{ let f = || send(req); f() }",
        ] {
            assert_eq!(consumed_in(body, &["req"]), ["req"], "{body}");
        }
        assert_eq!(consumed_in("{ consume(self) }", &["self"]), ["self"]);
    }

    #[test]
    fn borrowing_and_unknown_positions_are_not() {
        for body in [
            "{ send(&req) }",
            "{ send(&mut req) }",
            "{ req.send() }",
            "{ send(req.body) }",
            "{ send(req.body.clone()) }",
            "{ let _ = req; Ok(()) }",
            "{ match req { _ => Ok(()) } }",
            "{ if req == other { Ok(()) } else { Err(E) } }",
            "{ println!(\"{}\", req); Ok(()) }",
            "{ fn inner(req: u8) -> u8 { take(req) } Ok(()) }",
            "{ let f = || req.len(); Ok(f()) }",
            "{ Ok(req.len()) }",
        ] {
            assert!(consumed_in(body, &["req"]).is_empty(), "{body}");
        }
    }

    #[test]
    fn a_name_the_body_binds_again_is_left_out() {
        assert!(consumed_in("{ let req = &other; send(req) }", &["req"]).is_empty());
        assert!(consumed_in("{ items.map(|req| send(req)) }", &["req"]).is_empty());
        assert_eq!(
            consumed_in("{ let r = &other; send(r); send(req) }", &["req", "r"]),
            ["req"]
        );
    }

    #[test]
    fn a_move_closure_ends_where_it_ends() {
        let body = "{ std::thread::spawn(move || 1); let r = &req; send(r) }";
        assert!(consumed_in(body, &["req"]).is_empty());
    }

    #[test]
    fn qualified_paths_are_not_arguments_and_invisible_groups_are_looked_through() {
        assert!(consumed_in("{ send(<T>::req) }", &["req"]).is_empty());
        // A macro_rules! expansion wraps a `$req:expr` in an invisible group.
        let req = proc_macro2::Group::new(proc_macro2::Delimiter::None, quote::quote!(req));
        let body: Block = syn::parse2(quote::quote!({ send(#req) })).unwrap();
        let arguments = [Ident::new("req", Span::call_site())];
        assert_eq!(consumed(&body, &arguments).len(), 1);
    }

    #[test]
    fn only_the_arguments_asked_about_are_returned() {
        assert_eq!(consumed_in("{ send(a); send(b) }", &["b", "c"]), ["b"]);
    }

    #[test]
    fn mentioned_names_come_from_paths_of_one_segment() {
        let closure: Expr = syn::parse_str("|error| cached(&req, Self::KEY, error)").unwrap();
        let arguments = [
            Ident::new("req", Span::call_site()),
            Ident::new("other", Span::call_site()),
        ];
        let found: Vec<_> = mentioned(&closure, &arguments)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(found, ["req"]);
    }
}
