//! Budgets, as a pure ledger: limits in tokens and USD for the run, for each workstream and for each brief;
//! what each scope has spent; and the check made **before** every call, which fails closed: if the call's
//! worst-case estimate could take any scope past its limit, the call is not made.
//!
//! Concurrent calls reserve their estimate ([`BudgetLedger::reserve`]) and settle it with the real usage
//! afterwards ([`BudgetLedger::settle`]), so two calls in flight cannot both squeeze under one limit. The
//! runner persists spending as `usage` events and rebuilds a ledger on resume by replaying them through
//! [`BudgetLedger::record`].

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::message::{CallMeta, Request, Usage};
use crate::price::{Price, cost};

/// What a budget applies to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "scope", content = "id", rename_all = "snake_case")]
pub enum Scope {
    /// The whole run.
    Run,
    /// One workstream, by id.
    Workstream(String),
    /// One brief, by id.
    Brief(String),
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Run => f.write_str("run"),
            Scope::Workstream(id) => write!(f, "workstream {id}"),
            Scope::Brief(id) => write!(f, "brief {id}"),
        }
    }
}

/// A limit in tokens and/or USD; `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Limit {
    /// All tokens (input, output, cache reads and writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Money, in USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd: Option<f64>,
}

/// The default limit for each kind of scope; [`BudgetLedger::raise`] overrides one scope.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct BudgetLimits {
    /// For the run.
    #[serde(default)]
    pub run: Limit,
    /// For each workstream.
    #[serde(default)]
    pub workstream: Limit,
    /// For each brief.
    #[serde(default)]
    pub brief: Limit,
}

/// Tokens and money, spent or estimated.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Spend {
    /// Tokens.
    pub tokens: u64,
    /// USD.
    pub usd: f64,
}

impl Spend {
    /// What a completed call spent.
    pub fn of(usage: &Usage, price: Option<&Price>) -> Self {
        Self {
            tokens: usage.total(),
            usd: price.map_or(0.0, |p| cost(usage, p)),
        }
    }

    /// A worst-case estimate for `request`: input at one token per 3 bytes of text and schema (generous for
    /// English and code), all of it at the dearer of the input and cache-write prices, plus `max_tokens` of
    /// output.
    pub fn estimate(request: &Request, price: Option<&Price>) -> Self {
        let schema_bytes: usize = request
            .tools
            .iter()
            .map(|t| t.input_schema.to_string().len())
            .sum();
        let bytes = request.searchable_text().len() + schema_bytes;
        let input = u64::try_from(bytes.div_ceil(3)).unwrap_or(u64::MAX);
        let output = u64::from(request.max_tokens);
        let usd = price.map_or(0.0, |p| {
            let worst = Price {
                input: p.input.max(p.cache_write),
                ..*p
            };
            cost(
                &Usage {
                    input,
                    output,
                    ..Usage::default()
                },
                &worst,
            )
        });
        Self {
            tokens: input.saturating_add(output),
            usd,
        }
    }

    fn add(self, other: Spend) -> Spend {
        Spend {
            tokens: self.tokens.saturating_add(other.tokens),
            usd: self.usd + other.usd,
        }
    }

    fn sub(self, other: Spend) -> Spend {
        Spend {
            tokens: self.tokens.saturating_sub(other.tokens),
            usd: (self.usd - other.usd).max(0.0),
        }
    }
}

/// An amount of one budget unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Amount {
    /// Tokens.
    Tokens(u64),
    /// USD.
    Usd(f64),
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Amount::Tokens(n) => write!(f, "{n} tokens"),
            Amount::Usd(usd) => write!(f, "${usd:.4}"),
        }
    }
}

/// A call was refused because it could take `scope` past `limit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{scope} budget exhausted: {spent} spent of {limit}, and the next call may need up to {needed}")]
pub struct BudgetExceeded {
    /// The scope whose limit would be passed.
    pub scope: Scope,
    /// Its limit.
    pub limit: Amount,
    /// What it has spent (and reserved for calls in flight).
    pub spent: Amount,
    /// What the refused call could have needed.
    pub needed: Amount,
}

/// The scopes one call counts against.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CallScope {
    /// Its workstream.
    pub workstream: Option<String>,
    /// Its brief.
    pub brief: Option<String>,
}

impl CallScope {
    /// The scopes named by `meta`: the brief by id (or by label when it has no id) and the workstream.
    pub fn from_meta(meta: &CallMeta) -> Self {
        Self {
            workstream: meta.workstream.clone(),
            brief: meta
                .brief_id
                .map(|id| id.to_string())
                .or_else(|| meta.brief.clone()),
        }
    }

    /// Narrowest first: brief, workstream, run.
    fn scopes(&self) -> Vec<Scope> {
        let mut scopes = Vec::with_capacity(3);
        scopes.extend(self.brief.clone().map(Scope::Brief));
        scopes.extend(self.workstream.clone().map(Scope::Workstream));
        scopes.push(Scope::Run);
        scopes
    }
}

/// Limits, spending and reservations for one run.
#[derive(Debug, Clone, Default)]
pub struct BudgetLedger {
    limits: BudgetLimits,
    overrides: HashMap<Scope, Limit>,
    spent: HashMap<Scope, Spend>,
    reserved: HashMap<Scope, Spend>,
}

impl BudgetLedger {
    /// A ledger with nothing spent.
    pub fn new(limits: BudgetLimits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    /// The limit in force for `scope`.
    pub fn limit(&self, scope: &Scope) -> Limit {
        self.overrides.get(scope).copied().unwrap_or(match scope {
            Scope::Run => self.limits.run,
            Scope::Workstream(_) => self.limits.workstream,
            Scope::Brief(_) => self.limits.brief,
        })
    }

    /// What `scope` has spent, not counting calls in flight.
    pub fn spent(&self, scope: &Scope) -> Spend {
        self.spent.get(scope).copied().unwrap_or_default()
    }

    /// Sets a new limit for one scope (a human raised it at the `budget` gate).
    pub fn raise(&mut self, scope: Scope, limit: Limit) {
        self.overrides.insert(scope, limit);
    }

    /// Whether a call estimated at `estimate` may be made: every scope's spending, plus what calls in
    /// flight reserved, plus the estimate, must stay within its limit.
    pub fn check_before_call(&self, call: &CallScope, estimate: Spend) -> Result<(), BudgetExceeded> {
        for scope in call.scopes() {
            let limit = self.limit(&scope);
            let committed = self
                .spent(&scope)
                .add(self.reserved.get(&scope).copied().unwrap_or_default());
            if let Some(max) = limit.tokens
                && committed.tokens.saturating_add(estimate.tokens) > max
            {
                return Err(BudgetExceeded {
                    scope,
                    limit: Amount::Tokens(max),
                    spent: Amount::Tokens(committed.tokens),
                    needed: Amount::Tokens(estimate.tokens),
                });
            }
            if let Some(max) = limit.usd
                && committed.usd + estimate.usd > max
            {
                return Err(BudgetExceeded {
                    scope,
                    limit: Amount::Usd(max),
                    spent: Amount::Usd(committed.usd),
                    needed: Amount::Usd(estimate.usd),
                });
            }
        }
        Ok(())
    }

    /// Checks, then holds `estimate` against every scope until [`settle`](Self::settle) or
    /// [`release`](Self::release).
    pub fn reserve(&mut self, call: &CallScope, estimate: Spend) -> Result<(), BudgetExceeded> {
        self.check_before_call(call, estimate)?;
        for scope in call.scopes() {
            let held = self.reserved.entry(scope).or_default();
            *held = held.add(estimate);
        }
        Ok(())
    }

    /// Drops a reservation whose call failed without usage.
    pub fn release(&mut self, call: &CallScope, estimate: Spend) {
        for scope in call.scopes() {
            if let Some(held) = self.reserved.get_mut(&scope) {
                *held = held.sub(estimate);
            }
        }
    }

    /// Replaces a reservation by what the call really spent.
    pub fn settle(&mut self, call: &CallScope, estimate: Spend, actual: Spend) {
        self.release(call, estimate);
        self.record(call, actual);
    }

    /// Forgets a brief that has ended: it spends no more (a retry is a new brief), and a long run must not
    /// keep an entry for every brief it ever ran. What it spent stays counted in its workstream and the run.
    pub fn forget_brief(&mut self, brief: &str) {
        let scope = Scope::Brief(brief.to_owned());
        self.spent.remove(&scope);
        self.reserved.remove(&scope);
        self.overrides.remove(&scope);
    }

    /// Adds spending to every scope of `call` (also used to replay `usage` events on resume).
    pub fn record(&mut self, call: &CallScope, actual: Spend) {
        for scope in call.scopes() {
            let spent = self.spent.entry(scope).or_default();
            *spent = spent.add(actual);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(ws: &str, brief: &str) -> CallScope {
        CallScope {
            workstream: Some(ws.into()),
            brief: Some(brief.into()),
        }
    }

    fn tokens(n: u64) -> Spend {
        Spend { tokens: n, usd: 0.0 }
    }

    #[test]
    fn a_forgotten_brief_leaves_its_spending_in_its_workstream_and_the_run() {
        let mut ledger = BudgetLedger::new(BudgetLimits::default());
        ledger.record(&call("ws", "b1"), tokens(30));
        ledger.record(&call("ws", "b2"), tokens(12));
        ledger.forget_brief("b1");
        assert_eq!(ledger.spent(&Scope::Brief("b1".into())).tokens, 0);
        assert_eq!(ledger.spent(&Scope::Brief("b2".into())).tokens, 12);
        assert_eq!(ledger.spent(&Scope::Workstream("ws".into())).tokens, 42);
        assert_eq!(ledger.spent(&Scope::Run).tokens, 42);
        assert_eq!(ledger.spent.len(), 3, "run, workstream and the live brief");
    }

    #[test]
    fn fails_closed_at_the_narrowest_scope_that_would_overflow() {
        let limits = BudgetLimits {
            run: Limit {
                tokens: Some(1000),
                usd: None,
            },
            workstream: Limit {
                tokens: Some(600),
                usd: None,
            },
            brief: Limit {
                tokens: Some(300),
                usd: None,
            },
        };
        let mut ledger = BudgetLedger::new(limits);
        let b1 = call("ws1", "b1");
        assert_eq!(ledger.check_before_call(&b1, tokens(300)), Ok(()));
        ledger.record(&b1, tokens(250));
        let err = ledger.check_before_call(&b1, tokens(51)).unwrap_err();
        assert_eq!(err.scope, Scope::Brief("b1".into()));
        assert_eq!(
            (err.limit, err.spent, err.needed),
            (Amount::Tokens(300), Amount::Tokens(250), Amount::Tokens(51))
        );
        assert_eq!(ledger.check_before_call(&b1, tokens(50)), Ok(()));
        ledger.record(&call("ws1", "b2"), tokens(300));
        let err = ledger
            .check_before_call(&call("ws1", "b3"), tokens(100))
            .unwrap_err();
        assert_eq!(err.scope, Scope::Workstream("ws1".into()));
        ledger.record(&call("ws2", "b4"), tokens(450));
        let err = ledger
            .check_before_call(&call("ws3", "b5"), tokens(1))
            .unwrap_err();
        assert_eq!(err.scope, Scope::Run);
        assert_eq!(
            err.to_string(),
            "run budget exhausted: 1000 tokens spent of 1000 tokens, and the next call may need up to 1 tokens"
        );
    }

    #[test]
    fn usd_limits_and_raising() {
        let limits = BudgetLimits {
            run: Limit {
                tokens: None,
                usd: Some(1.0),
            },
            ..BudgetLimits::default()
        };
        let mut ledger = BudgetLedger::new(limits);
        let c = CallScope::default();
        ledger.record(&c, Spend { tokens: 10, usd: 0.9 });
        let err = ledger
            .check_before_call(&c, Spend { tokens: 1, usd: 0.2 })
            .unwrap_err();
        assert_eq!(err.limit, Amount::Usd(1.0));
        ledger.raise(
            Scope::Run,
            Limit {
                tokens: None,
                usd: Some(2.0),
            },
        );
        assert_eq!(
            ledger.check_before_call(&c, Spend { tokens: 1, usd: 0.2 }),
            Ok(())
        );
    }

    #[test]
    fn reservations_stop_concurrent_calls_from_sharing_headroom() {
        let limits = BudgetLimits {
            brief: Limit {
                tokens: Some(100),
                usd: None,
            },
            ..BudgetLimits::default()
        };
        let mut ledger = BudgetLedger::new(limits);
        let b = call("w", "b");
        ledger.reserve(&b, tokens(60)).unwrap();
        assert!(ledger.reserve(&b, tokens(60)).is_err());
        ledger.settle(&b, tokens(60), tokens(20));
        assert_eq!(ledger.spent(&Scope::Brief("b".into())), tokens(20));
        ledger.reserve(&b, tokens(60)).unwrap();
        ledger.release(&b, tokens(60));
        assert_eq!(ledger.check_before_call(&b, tokens(80)), Ok(()));
    }

    #[test]
    fn estimate_is_worst_case() {
        let request = Request {
            system: vec!["x".repeat(300)],
            max_tokens: 50,
            ..Request::default()
        };
        let price = Price {
            input: 1.0,
            output: 10.0,
            cache_read: 0.1,
            cache_write: 2.0,
        };
        let est = Spend::estimate(&request, Some(&price));
        assert_eq!(est.tokens, 150);
        assert!((est.usd - (100.0 * 2.0 + 50.0 * 10.0) / 1e6).abs() < 1e-12);
    }
}
