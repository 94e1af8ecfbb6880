//! The third stage: the generated code, from the checked model
//! (`check::Breaker`: the arguments' values and what they mean together)
//! and the function's shape (`check::shape`), never from key names.
//!
//! Rewrites the annotated function. The user's attributes, visibility,
//! signature, generics and where clause are kept token for token; only the
//! body changes (every runtime path goes through `CRATE::__private`, where
//! `CRATE` is `::failfast` or the `crate = ..` key):
//!
//! ```text
//! fn f(args..) -> Ret {
//!     // only with a predicate in `counts`/`ignores`:
//!     fn __failfast_check<E: ?Sized, F: FnOnce(&E) -> bool>(error: &E, predicate: F) -> bool;
//!     static __FAILFAST_BREAKER: Breaker =
//!         Breaker::from_config(Config::new(NAME).threshold(5).recovery(..)..);
//!     // its entry in the link-time list of declared breakers (`declare`)
//!     static __FAILFAST_DECLARED: Declared = Declared { breaker: &__FAILFAST_BREAKER, .. };
//!     // with a fallback, what follows is in `let error = 'fallback: { .. };`
//!     // (with `key` or `breaker = NAME`, the static and these two lines
//!     // differ: see `source`)
//!     let __failfast_breaker: &'static Breaker = breaker(&__FAILFAST_BREAKER);
//!     let [mut] __failfast_permit = match acquire(__failfast_breaker) {   // `mut` with max_concurrent = N
//!         Ok(permit) => permit,
//!         Err(rejected) => return join::<Ret>(Err(rejected(rejected))), // at E; FromRejected
//!         // with a fallback: break 'fallback Error::Rejected(rejected)
//!     };
//!     // only with `max_concurrent = N` (and `static __FAILFAST_BULKHEAD:
//!     // Bulkhead = Bulkhead::new(N);` beside the breaker; an adaptive
//!     // `max_concurrent = MIN..=MAX` is `.adaptive_concurrency(MIN, MAX)`
//!     // in the breaker's config instead, taken by `acquire`):
//!     // (with `max_wait`: `enter_waiting(&__FAILFAST_BULKHEAD, &mut permit)`,
//!     // `.await`ed in an `async fn`; the permit's time starts once it has
//!     // a place)
//!     let __failfast_slot = match enter(&__FAILFAST_BULKHEAD) {
//!         Some(slot) => slot,
//!         None => { let rejected = concurrency_limit(__failfast_breaker, &permit); /* as above */ }
//!     };
//!     let __failfast_result: Ret = run(move || -> Ret { body });        // sync
//!     // async: the body owns the permit while it runs and gives it back
//!     let (__failfast_result, __failfast_permit): (Ret, _) =
//!         body(__failfast_permit, async move { <fake return>; body }).await;
//!     let (__failfast_result, __failfast_permit): (Ret, _) =       // `timeout`
//!         match timeout(Tokio, __failfast_permit, LIMIT, async move { .. }).await {
//!         Ok(result_and_permit) => result_and_permit,
//!         // the failure is already recorded
//!         Err(timed_out) => return join::<Ret>(Err(timed_out(timed_out))), // at E; FromTimedOut
//!         // with a fallback: break 'fallback Error::Timeout(timed_out)
//!     };
//!     // (no `move` with a path fallback, which is given the arguments after
//!     // the body; `impl Trait` in `Ret` becomes `_`)
//!     match split::<Ret>(__failfast_result) {      // ResultParts: Ret is a Result
//!         Ok(value) => { permit.success(); return join::<Ret>(Ok(value)); }
//!         Err(error) => {
//!             // without `counts`: the rule of `Ret`, which is `true` but
//!             // for `Result<T, tonic::Status>` (see `matcher::default_check`)
//!             if counts(&error) && !ignores(&error) {
//!                 permit.failure();
//!                 return join::<Ret>(Err(error));
//!                 // with a fallback: break 'fallback Error::Failed(error)
//!             }
//!             permit.neutral();
//!             return join::<Ret>(Err(error));
//!         }
//!     };
//!     // with a fallback, its one call:
//!     return fallback(args.., error) [.await];              // fallback = path
//!     return __failfast_fallback(error, |error| ..) [.await]; // fallback = closure
//! }
//! ```
//!
//! Under `#[retry]` (see `retry`) this code is one attempt, and
//! reports its verdict to the loop before each `Err` it returns. With a
//! fallback there, the attempt is a `Result<Ret, failfast::Error<E>>`: what
//! leaves the labelled block is returned as `Err(error)` for the loop to
//! decide on (and to give the fallback after the last attempt), and the
//! `return`s above return `Ok(ret)`.
//!
//! Under `#[async_trait]` the same statements go inside `Box::pin(async move {
//! .. })`, and `async_trait`'s own future is the body that `body` polls.
//!
//! A panic in a sync body unwinds through the permit, whose `Drop` records a
//! failure. An async body is polled by `body`, which records a failure when a
//! poll of the body panics and makes the permit's drop neutral otherwise, so
//! a sibling future's panic (`join!`, a task torn down) is not blamed on the
//! dependency. A future dropped mid-call drops the body unfinished, which the
//! runtime records as neutral, as slow once it ran past `slow`, or as a
//! failure once past `timeout`.

pub(crate) mod config;
pub(crate) mod declaration;
pub(crate) mod declare;
pub(crate) mod fallback;
pub(crate) mod matcher;
pub(crate) mod retry;
pub(crate) mod source;

use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Block, ItemFn, Type};

use crate::attr::{Args, Errors, Matcher};
use crate::check::shape::{Body, Shape, is_anyhow, is_failfast_attribute, not_a_function};
use crate::check::{self, Breaker};
use crate::tokens::{allow, at_type, duration, located_at, nested, respan, runtime};
use fallback::{FallbackCall, fallback_call, kept_for_fallback};
use matcher::OkRule;
use source::Source;

pub fn circuit_breaker(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let breaker = check::breaker(Args::parse(args, &mut errors), &mut errors);
    let func = match syn::parse2::<ItemFn>(item.clone()) {
        Ok(func) => Some(func),
        Err(_) => {
            errors.push(not_a_function(&item, "circuit_breaker"));
            None
        }
    };
    // `#[retry]` below: see `retry`, which expands a breaker below it.
    if let Some(retry) = func.as_ref().and_then(|f| {
        f.attrs
            .iter()
            .find(|attr| is_failfast_attribute(attr, "retry"))
    }) {
        errors.push(syn::Error::new_spanned(
            retry,
            "`#[retry]` must be written above `#[circuit_breaker]`: attributes expand from \
             the top, so below it the retries would run inside one breaker call (the breaker \
             would count one call for all attempts, and retry a dependency it has given up \
             on); move `#[retry(..)]` above `#[circuit_breaker(..)]`",
        ));
    }
    let shape = func
        .as_ref()
        .and_then(|f| Shape::of(f, &breaker.args, "circuit_breaker", &mut errors));
    match (errors.into_result(), &func, shape) {
        (None, Some(func), Some(shape)) => expand(func, &breaker, &shape),
        // Emit the function as written, so the rest of the crate (and the
        // IDE) keeps working; the errors say what to fix.
        (error, _, _) => {
            let error = error.map(|e| e.to_compile_error());
            quote!(#error #item)
        }
    }
}

/// `<Ret as ResultParts<_, _>>::into_result` and `::from_result`, spanned
/// at the return type: a type that is not a `Result` is reported there once,
/// and nowhere else.
pub(crate) fn result_parts(private: &TokenStream, output: &Type) -> (TokenStream, TokenStream) {
    let parts = quote!(as #private::ResultParts<_, _>>);
    (
        at_type(quote!(<), output, quote!(#parts::into_result)),
        at_type(quote!(<), output, quote!(#parts::from_result)),
    )
}

/// The user's async body as an `async` block. The fake return edge tells the
/// block its output type before the body is checked, so the body's tail
/// coerces as it would in the function itself (`Err(Box::new(e))` into
/// `Box<dyn Error>`, `?`).
pub(crate) fn async_block(
    move_: Option<&TokenStream>,
    output: &Type,
    block: &Block,
    allow: &TokenStream,
) -> TokenStream {
    let block = nested(block);
    quote! {
        async #move_ {
            #allow
            if false {
                let __failfast_fake_return: #output = loop {};
                return __failfast_fake_return;
            }
            #block
        }
    }
}

/// What the breaker tells a `#[retry]` above it about each call, right
/// before returning (see `__private::report` in the runtime); nothing at all
/// for a breaker without `#[retry]`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Report {
    /// No `#[retry]` above.
    Nothing,
    /// Under `#[retry]`: every `Err` path reports its verdict.
    Verdicts,
    /// Under `#[retry]`, with a `fallback`: the call's code is the retry
    /// loop's attempt, `Result<Ret, failfast::Error<E>>`. What the fallback
    /// would be given (a rejection, a counted failure, a timeout) is reported
    /// and handed to the loop as `Err`, which calls the fallback once after
    /// the last attempt; an `Ok` or a neutral error is handed over as
    /// `Ok(ret)`, for the loop to return as it is (a neutral error is never
    /// retried: no verdict is needed).
    HandOver,
}

impl Report {
    fn of(breaker: &Breaker) -> Report {
        match (breaker.report_to_retry, &breaker.args.fallback) {
            (false, _) => Report::Nothing,
            (true, None) => Report::Verdicts,
            (true, Some(_)) => Report::HandOver,
        }
    }

    /// The `__private` function converting a rejection into the
    /// function's error.
    fn rejected(self) -> TokenStream {
        if self == Report::Nothing {
            quote!(rejected)
        } else {
            quote!(rejected_reported)
        }
    }

    /// Reports a rejection converted by the user's `reject_with`, or handed
    /// to the fallback.
    fn rejection(self, private: &TokenStream) -> Option<TokenStream> {
        (self != Report::Nothing).then(|| quote!(#private::report(#private::Verdict::Rejected);))
    }

    fn failure(self, private: &TokenStream) -> Option<TokenStream> {
        (self != Report::Nothing)
            .then(|| quote!(#private::report(#private::failure(__failfast_breaker));))
    }

    fn neutral(self, private: &TokenStream) -> Option<TokenStream> {
        (self == Report::Verdicts).then(|| quote!(#private::report(#private::Verdict::Neutral);))
    }

    /// Returns `result` (a `Result<T, E>`) as the function's `Ret`, or, as
    /// the retry loop's attempt, as `Ok(ret)`.
    fn returns(self, join: &TokenStream, result: TokenStream) -> TokenStream {
        if self == Report::HandOver {
            quote!(return ::core::result::Result::Ok(#join(#result)))
        } else {
            quote!(return #join(#result))
        }
    }
}

/// Rewrites the function, in stages: [`Plan::new`] decides what the
/// generated code needs (the breaker's source, what counts, where each exit
/// goes); [`Plan::call`] emits the guarded call, with the body wrapped by
/// [`Plan::run`]; [`Plan::with_fallback`] hands its refusals and failures
/// to the fallback; [`Plan::statics`] emits the breaker's `static`. The
/// arguments and the shape were checked before (`check::breaker`,
/// `Shape::of`).
pub(crate) fn expand(func: &ItemFn, breaker: &Breaker, shape: &Shape) -> TokenStream {
    let args = &breaker.args;
    let krate = runtime(args.krate.as_ref().map(|k| &k.value));
    let private = quote!(#krate::__private);
    let allow = allow();
    let plan = Plan::new(func, breaker, shape, &krate, &private, &allow);
    let call = plan.with_fallback(plan.call());
    let helper = Matcher::helper([&args.counts, &args.ignores, &args.counts_ok], &allow);
    // Under `#[retry]`, the loop around the attempts checks them once.
    let kept = match &args.fallback {
        Some(fallback) if !breaker.report_to_retry => {
            kept_for_fallback(&func.sig, &shape.body, &fallback.value)
        }
        _ => TokenStream::new(),
    };
    let statics = plan.statics(func);
    let guarded = quote! {
        #helper
        #kept
        #statics
        #call
    };
    with_body(func, shape, &guarded)
}

/// What the generated code needs, decided once from the arguments and the
/// function's shape.
struct Plan<'a> {
    args: &'a Args,
    shape: &'a Shape<'a>,
    private: &'a TokenStream,
    allow: &'a TokenStream,
    /// Where the breaker comes from: a `static` of its own, a family's
    /// member, a shared breaker.
    source: Source<'a>,
    report: Report,
    is_async: bool,
    /// Whether `__failfast_error` is a counted failure: `counts` (the return
    /// type's default rule when absent) and not `ignores`.
    counted: TokenStream,
    /// With `counts_ok`, what the call's `Ok` is.
    ok_rule: Option<OkRule>,
    /// `ResultParts::into_result` and `::from_result` at the return type:
    /// taking the returned value apart and building it again goes through
    /// them, so a type that is not a `Result` is reported there once, and
    /// nowhere else.
    split: TokenStream,
    join: TokenStream,
    exits: Exits,
}

/// Where the call goes when it is refused, when its error counts as a
/// failure, and when it times out. The locals they take
/// (`__failfast_rejected`, `__failfast_error`, `__failfast_timed_out`) keep
/// the call-site span even where the code around them is spanned at the
/// user's tokens for better errors: local variables are hygienic when the
/// function comes out of a `macro_rules!` macro.
struct Exits {
    reject: TokenStream,
    failure: TokenStream,
    timeout: TokenStream,
    /// An `Ok(__failfast_value)` that `counts_ok` counted as a failure.
    counted_ok: TokenStream,
}

impl<'a> Plan<'a> {
    fn new(
        func: &ItemFn,
        breaker: &'a Breaker,
        shape: &'a Shape<'a>,
        krate: &TokenStream,
        private: &'a TokenStream,
        allow: &'a TokenStream,
    ) -> Self {
        let args = &breaker.args;
        let is_async = matches!(shape.body, Body::Async(_));
        let source = Source::new(
            breaker,
            is_async,
            declare::default_name(func),
            private,
            allow,
        );
        let report = Report::of(breaker);
        let (split, join) = result_parts(private, &shape.output);
        let exits = match &args.fallback {
            Some(_) => Exits::to_fallback(private, report),
            None => Exits::returning(args, shape, private, &join, report),
        };
        Plan {
            args,
            shape,
            private,
            allow,
            source,
            report,
            is_async: !matches!(shape.body, Body::Sync(_)),
            counted: counted(args, krate, &shape.output),
            ok_rule: args
                .counts_ok
                .as_ref()
                .map(|counts_ok| OkRule::of(&counts_ok.value, krate)),
            split,
            join,
            exits,
        }
    }
}

/// `counts` (the return type's default rule when absent) and not `ignores`,
/// of `__failfast_error`.
fn counted(args: &Args, krate: &TokenStream, output: &Type) -> TokenStream {
    let error = quote!(&__failfast_error);
    let anyhow = is_anyhow(output);
    let counts = match &args.counts {
        Some(counts) => counts.value.check(krate, &error, anyhow),
        None => matcher::default_check(krate, &error, &quote!(__failfast_returned)),
    };
    match &args.ignores {
        Some(ignores) => {
            let check = ignores.value.check(krate, &error, anyhow);
            quote!(#counts && !#check)
        }
        None => counts,
    }
}

impl Exits {
    /// With a fallback, a rejection, a counted failure and a timeout all
    /// leave the labelled block with the `failfast::Error` for the one call
    /// of the fallback after it: one call site, so a fallback that does not
    /// fit is one error. Under `#[retry]`, a rejection and a timeout are
    /// reported to the loop (a counted failure is reported before its exit).
    /// (`break 'label ::path` reads as a labelled loop to syn, which parses
    /// this expansion when another attribute macro comes after this one: the
    /// value is bound first.)
    fn to_fallback(private: &TokenStream, report: Report) -> Exits {
        let to_fallback =
            |variant: TokenStream, value: &TokenStream, report: Option<TokenStream>| {
                quote!({
                    #report
                    let __failfast_fallback_error = #private::Error::#variant(#value);
                    break '__failfast_fallback __failfast_fallback_error;
                })
            };
        Exits {
            reject: to_fallback(
                quote!(Rejected),
                &quote!(__failfast_rejected),
                report.rejection(private),
            ),
            failure: to_fallback(quote!(Failed), &quote!(__failfast_error), None),
            counted_ok: to_fallback(quote!(CountedOk), &quote!(__failfast_value), None),
            timeout: to_fallback(
                quote!(Timeout),
                &quote!(__failfast_timed_out),
                report.failure(private),
            ),
        }
    }

    /// Without a fallback, each exit returns an `Err` of the function's
    /// error type: a rejection and a timeout converted into it, where "E has
    /// no `From<Rejected>`" (or `From<TimedOut>`) is reported once, at `E`;
    /// with `reject_with`, a rejection converted by the user's function.
    /// Under `#[retry]`, a rejection and a timeout (a counted failure) are
    /// reported to the retry loop before returning.
    fn returning(
        args: &Args,
        shape: &Shape,
        private: &TokenStream,
        join: &TokenStream,
        report: Report,
    ) -> Exits {
        let span = shape.error_span;
        let convert = |helper: TokenStream, value: &TokenStream| {
            let convert = respan(quote!(#private::#helper), span);
            let err = quote_spanned!(span=> ::core::result::Result::Err(#convert(#value)));
            quote!(return #join(#err))
        };
        let on_timeout = convert(quote!(timed_out), &quote!(__failfast_timed_out));
        let report_timeout = report.failure(private);
        // `reject_with = path` is spanned at the path: a signature that does
        // not fit is one error there.
        let reject = match &args.reject_with {
            Some(path) => {
                let path = &path.value;
                let report = report.rejection(private);
                let span = path.span();
                let argument = located_at(quote!(__failfast_rejected), span);
                let call = quote_spanned!(span=> #path(#argument));
                quote!({
                    #report
                    return #join(::core::result::Result::Err(#call))
                })
            }
            None => convert(report.rejected(), &quote!(__failfast_rejected)),
        };
        let failed = quote!(__failfast_error);
        Exits {
            reject,
            failure: quote!(return #join(::core::result::Result::Err(#failed))),
            timeout: quote!({ #report_timeout #on_timeout }),
            // Counted, and returned as it is.
            counted_ok: quote!(return #join(::core::result::Result::Ok(__failfast_value))),
        }
    }
}

impl Plan<'_> {
    /// The guarded call: admission (and a place in the bulkhead), the body,
    /// and its verdict on the permit, each path ending in a `return` or an
    /// exit.
    fn call(&self) -> TokenStream {
        let Plan {
            private,
            allow,
            split,
            join,
            ..
        } = self;
        let reject = &self.exits.reject;
        // An async body is polled through `body`, which owns the permit while
        // the body runs and gives it back with the body's output (see `Body`
        // in the runtime): only a panic raised while the body itself is
        // polled counts as its failure, and the function's future holds no
        // permit of its own across the `.await`.
        let mut_ = self.args.bulkhead().is_some().then(|| quote!(mut));
        let output = &self.shape.output;
        let result = if self.is_async {
            quote!((__failfast_result, __failfast_permit): (#output, _))
        } else {
            quote!(__failfast_result: #output)
        };
        let (lookup, acquire) = (self.source.lookup(), self.source.acquire());
        let enter = self.enter();
        let run = self.run();
        // Without `counts`, the default rule is chosen by the return type.
        let returned = self.args.counts.is_none().then(|| {
            quote! {
                #allow
                let __failfast_returned = #private::returned(&__failfast_result);
            }
        });
        let success = self
            .report
            .returns(join, quote!(::core::result::Result::Ok(__failfast_value)));
        let (judge_ok, on_ok) = self.on_ok(&success);
        // A classifier's statements took the result apart already.
        let scrutinee = match &judge_ok {
            Some(_) => quote!(__failfast_result),
            None => quote!(#split(__failfast_result)),
        };
        let on_error = self.on_error();
        quote! {
            #lookup
            #allow
            let #mut_ __failfast_permit = match #acquire {
                ::core::result::Result::Ok(__failfast_permit) => __failfast_permit,
                ::core::result::Result::Err(__failfast_rejected) => #reject,
            };
            #enter
            let #result = #run;
            #returned
            #judge_ok
            #allow
            match #scrutinee {
                ::core::result::Result::Ok(__failfast_value) => #on_ok,
                #on_error
            };
        }
    }

    /// With `max_concurrent = N`, a place in the bulkhead is taken once the
    /// breaker has admitted the call (an open breaker refuses without
    /// touching it) and held until the function returns, unwinds or is
    /// dropped; a full bulkhead refuses like the breaker does: the permit's
    /// admission is given back and the call counted as rejected. An adaptive
    /// `max_concurrent = MIN..=MAX` has no bulkhead: the breaker's `acquire`
    /// takes the place.
    fn enter(&self) -> Option<TokenStream> {
        let Plan { private, allow, .. } = self;
        let reject = &self.exits.reject;
        self.args.bulkhead().map(|_| {
            let enter = self.source.enter();
            quote! {
                #allow
                let __failfast_slot = match #enter {
                    ::core::option::Option::Some(__failfast_slot) => __failfast_slot,
                    ::core::option::Option::None => {
                        let __failfast_rejected = #private::concurrency_limit(
                            __failfast_breaker,
                            &mut __failfast_permit,
                        );
                        #reject
                    }
                };
            }
        })
    }

    /// The body, run: a sync body in a closure given to `run`; an async one
    /// polled by `body`, or by `timeout` with a time limit.
    fn run(&self) -> TokenStream {
        let Plan { private, allow, .. } = self;
        let output = &self.shape.output;
        let move_ = self.moves_arguments().then(|| quote!(move));
        match &self.shape.body {
            Body::Sync(block) => quote!(#private::run(#move_ || -> #output #block)),
            Body::Async(block) => {
                let future = async_block(move_.as_ref(), output, block, allow);
                self.await_body(future)
            }
            Body::AsyncTrait { future, .. } => self.await_body(future.to_token_stream()),
        }
    }

    /// Without a fallback the body takes its arguments by move, like the
    /// function it replaces. With one it borrows them, so that they are
    /// still there to pass to the fallback after a counted failure. Under
    /// `#[retry]` too, for the next attempt.
    fn moves_arguments(&self) -> bool {
        self.args
            .fallback
            .as_ref()
            .is_none_or(|fallback| !fallback.value.takes_arguments())
            && self.report == Report::Nothing
    }

    /// The async body's `future`, awaited. With `timeout`, it is polled
    /// through `timeout`, which records the failure itself when the limit
    /// passes; the timer's marker sits at the key, where a missing `tokio`
    /// feature is reported.
    fn await_body(&self, future: TokenStream) -> TokenStream {
        let private = self.private;
        match self.args.duration(failfast_rules::Key::Timeout) {
            None => quote!(#private::body(__failfast_permit, #future).await),
            Some(timeout) => {
                let limit = duration(timeout.value);
                let timer = respan(quote!(#private::Tokio), timeout.key);
                let on_timeout = &self.exits.timeout;
                quote! {
                    match #private::timeout(
                        #timer,
                        __failfast_permit,
                        #limit,
                        #future,
                    ).await {
                        ::core::result::Result::Ok(__failfast_result) => __failfast_result,
                        ::core::result::Result::Err(__failfast_timed_out) => #on_timeout,
                    }
                }
            }
        }
    }

    /// The `Ok` arm of the verdict: a success; with `counts_ok`, the
    /// outcome it gives the `Ok`, a counted failure going where a counted
    /// error goes (the fallback, or the caller as it is, reported to a
    /// `#[retry]` above as a failure). Also the statements that judge the
    /// whole result first, for a classifier: taken apart first, so that a
    /// return type that is not a `Result` is reported once, at the type.
    fn on_ok(&self, success: &TokenStream) -> (Option<TokenStream>, TokenStream) {
        let Plan {
            private,
            report,
            allow,
            split,
            ..
        } = self;
        let Some(OkRule { judge, outcome }) = &self.ok_rule else {
            let on_ok = quote!({
                __failfast_permit.record(#private::Outcome::Success);
                #success;
            });
            return (None, on_ok);
        };
        let report_failure = report.failure(private);
        let counted_ok = &self.exits.counted_ok;
        let on_ok = quote!({
            let __failfast_outcome: #private::Outcome = #outcome;
            if __failfast_outcome == #private::Outcome::Failure {
                __failfast_permit.record(#private::Outcome::Failure);
                #report_failure
                #counted_ok;
            }
            __failfast_permit.record(__failfast_outcome);
            #success;
        });
        let before = judge.as_ref().map(|judge| {
            quote! {
                #allow
                let __failfast_result = #split(__failfast_result);
                #allow
                let __failfast_ok_outcome: #private::Outcome = #judge(&__failfast_result);
            }
        });
        (before, on_ok)
    }

    /// The `Err` arm of the verdict: a counted failure, or a neutral error
    /// returned as it is.
    fn on_error(&self) -> TokenStream {
        let Plan {
            private,
            report,
            counted,
            ..
        } = self;
        let on_failure = &self.exits.failure;
        let report_failure = report.failure(private);
        let report_neutral = report.neutral(private);
        let neutral = report.returns(
            &self.join,
            quote!(::core::result::Result::Err(__failfast_error)),
        );
        quote! {
            ::core::result::Result::Err(__failfast_error) => {
                if #counted {
                    __failfast_permit.record(#private::Outcome::Failure);
                    #report_failure
                    #on_failure;
                }
                __failfast_permit.record(#private::Outcome::Neutral);
                #report_neutral
                #neutral;
            }
        }
    }

    /// `call` inside the labelled block its exits leave with the
    /// `failfast::Error`, then the one call of the fallback; under
    /// `#[retry]`, the error handed to the loop, which calls the fallback
    /// after the last attempt. Without a fallback, `call` as it is.
    fn with_fallback(&self, call: TokenStream) -> TokenStream {
        let (allow, private) = (self.allow, self.private);
        let handed = handed_error(private, self.args);
        match &self.args.fallback {
            Some(_) if self.report == Report::HandOver => quote! {
                #allow
                let __failfast_fallback_error: #handed = '__failfast_fallback: { #call };
                #allow
                return ::core::result::Result::Err(__failfast_fallback_error);
            },
            Some(fallback) => {
                let FallbackCall {
                    helper,
                    prepare,
                    call: call_fallback,
                } = fallback_call(
                    &fallback.value,
                    &self.shape.fallback_args,
                    self.is_async,
                    allow,
                    private,
                );
                quote! {
                    #helper
                    #prepare
                    #allow
                    let __failfast_fallback_error: #handed = '__failfast_fallback: { #call };
                    #allow
                    return #call_fallback;
                }
            }
            None => call,
        }
    }

    /// The breaker's `static` (or the family's, and the bulkhead's) and,
    /// for a breaker or a family of its own, its entry in the registry,
    /// listed from the start.
    fn statics(&self, func: &ItemFn) -> TokenStream {
        let Plan {
            private,
            allow,
            source,
            ..
        } = self;
        let statics = source.statics();
        let declared = if source.is_own() {
            Some(declare::registration(
                &quote!(__FAILFAST_BREAKER),
                func.sig.ident.span(),
                private,
                allow,
            ))
        } else if source.is_own_family() {
            Some(declare::family_registration(
                &quote!(__FAILFAST_FAMILY),
                func.sig.ident.span(),
                private,
                allow,
            ))
        } else {
            None
        };
        let bounded = source.is_own_bounded().then(|| {
            declare::bounded(
                &quote!(__FAILFAST_BREAKER),
                &quote!(__FAILFAST_BULKHEAD),
                func.sig.ident.span(),
                private,
                allow,
            )
        });
        quote! {
            #statics
            #declared
            #bounded
        }
    }
}

/// The `failfast::Error` a fallback is given: `Error<E>` (its `Ok` type
/// the default, `Infallible`, which nothing carries) or, with `counts_ok`,
/// `Error<E, T>`, carrying the counted `Ok`. Written out, so that a closure
/// fallback's parameter has its type.
pub(crate) fn handed_error(private: &TokenStream, args: &Args) -> TokenStream {
    match &args.counts_ok {
        Some(_) => quote!(#private::Error<_, _>),
        None => quote!(#private::Error<_>),
    }
}

/// The function as written, with `statements` as its body (inside
/// `#[async_trait]`'s `Box::pin(async move { .. })` for that shape).
pub(crate) fn with_body(func: &ItemFn, shape: &Shape, statements: &TokenStream) -> TokenStream {
    let ItemFn {
        attrs, vis, sig, ..
    } = func;
    // syn puts the body's inner attributes (`#![allow(..)]`) with the outer
    // ones; they go back at the top of the body.
    let (outer, inner): (Vec<_>, Vec<_>) = attrs
        .iter()
        .partition(|attr| matches!(attr.style, syn::AttrStyle::Outer));
    let body = match &shape.body {
        Body::AsyncTrait { pin, .. } => quote!({ #(#inner)* #pin(async move { #statements }) }),
        _ => quote!({ #(#inner)* #statements }),
    };
    quote! {
        #(#outer)*
        #vis #sig #body
    }
}

#[cfg(test)]
mod tests;
