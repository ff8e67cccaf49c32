//! What the built-in agent does about a model's mistakes. Real models forget a field, end a turn with prose
//! instead of reporting, stop at the token limit in the middle of a tool call, or call the same tool with the
//! same arguments over and over. Each correctable mistake is answered inside the conversation (the prompt
//! cache intact, nothing re-read) with what was wrong and how to fix it; a mistake that persists past its
//! allowance stops the agent with a reason that says which mistake and shows its details whole.
//!
//! The allowances: `runner.repair_attempts` rejected reports and replies cut off in a row; one reminder to
//! report; [`REPEATS_NOTED`] identical calls in a row before a note, one more and the agent is looping.

use serde_json::Value;

use super::tools::{Tool, shape};

/// The identical tool calls in a row that earn a note; one more ends the agent as a loop.
pub const REPEATS_NOTED: u32 = 3;

/// The mistakes one agent has made so far, against their allowances.
#[derive(Debug)]
pub struct Repairs {
    /// Correctable mistakes of one kind it may be told of before it is stopped.
    allowed: u32,
    /// Reports whose output did not match the tier's schema.
    reports_rejected: u32,
    /// Whether it was already reminded to call its closing tool.
    reminded: bool,
    /// Replies cut off at the token limit in a row.
    cut_offs: u32,
    /// The last tool call (name and arguments) and how many times in a row it was made.
    last_call: Option<(String, Value)>,
    repeats: u32,
}

/// What to do about a repeated tool call.
#[derive(Debug, PartialEq, Eq)]
pub enum Repeat {
    /// Not a repeat worth a word: run it.
    Fresh,
    /// Run it, and add this note to its result.
    Noted(String),
    /// Do not run it: the agent is looping. The reason, for [`AgentStop::Mistake`](crate::runtime::AgentStop).
    Looping(String),
}

impl Repairs {
    /// No mistakes yet; `allowed` is `runner.repair_attempts`.
    pub fn new(allowed: u32) -> Self {
        Repairs {
            allowed,
            reports_rejected: 0,
            reminded: false,
            cut_offs: 0,
            last_call: None,
            repeats: 0,
        }
    }

    /// A report whose output does not match the `role`'s schema (`problems`, one per line). `Ok`: the
    /// error result that tells the model what to fix; `Err`: the reason to stop, its allowance used up.
    pub fn rejected_report(&mut self, role: &str, problems: &str) -> Result<String, String> {
        if self.reports_rejected >= self.allowed {
            return Err(if self.allowed == 0 {
                format!("reported an output that does not match the {role} schema:\n{problems}")
            } else {
                format!(
                    "did not fix its report in {} repair{} in the same conversation; its output still does \
                     not match the {role} schema:\n{problems}",
                    self.allowed,
                    if self.allowed == 1 { "" } else { "s" }
                )
            });
        }
        self.reports_rejected += 1;
        let left = self.allowed - self.reports_rejected;
        let chances = match left {
            0 => "this is your last chance".to_owned(),
            1 => "1 more try after this one".to_owned(),
            n => format!("{n} more tries after this one"),
        };
        Ok(format!(
            "report_result was not accepted: its `output` does not match the {role} schema:\n{problems}\n\
             Fix every problem listed and call report_result again with the whole report ({chances})."
        ))
    }

    /// A turn ended with no tool call, where the agent must end by calling `closing` (report_result, or
    /// submit_teachback in a teachback step). `Ok`: the one reminder, naming the tool and its fields; `Err`:
    /// the reason to stop, the reminder already given. `with_output`: the brief asks for an `output`.
    pub fn ended_without(&mut self, closing: Tool, with_output: bool) -> Result<String, String> {
        if self.reminded {
            return Err(format!(
                "ended its turn without calling {}, again after a reminder",
                closing.name()
            ));
        }
        self.reminded = true;
        let expected = shape(&closing.spec().input_schema);
        Ok(match closing {
            Tool::SubmitTeachback => format!(
                "You ended your turn without calling submit_teachback. Your teachback is reviewed only \
                 when you send it with that tool: call submit_teachback now (or report_result with status \
                 blocked if the task cannot be done). Expected arguments: {expected}"
            ),
            _ => {
                let output = if with_output {
                    ", and `output` as the Output section of your brief asks"
                } else {
                    ""
                };
                format!(
                    "You ended your turn without calling report_result. Your work is handed in only through \
                     that tool, and your session ends without it: call report_result now with `status` \
                     (done, partial or blocked), `summary`{output}. Expected arguments: {expected}"
                )
            }
        })
    }

    /// A reply was cut off at the token limit of `limit` tokens; `raised` is the limit of the next reply
    /// when it could be raised. `Ok`: what to tell the model; `Err`: the reason to stop, cut off too often
    /// in a row.
    pub fn cut_off(&mut self, limit: u32, raised: Option<u32>) -> Result<String, String> {
        self.cut_offs += 1;
        if self.cut_offs > self.allowed {
            return Err(format!(
                "was cut off at the output token limit ({limit} tokens) {} times in a row",
                self.cut_offs
            ));
        }
        let raised = raised
            .map(|tokens| format!(" Your next reply may be up to {tokens} tokens."))
            .unwrap_or_default();
        Ok(format!(
            "Your reply was cut off at the output token limit ({limit} tokens); a tool call it was writing \
             was lost and not run. Send it again, shorter: write a large file in parts (write_file, then \
             edit_file), and say less before the call.{raised}"
        ))
    }

    /// A reply ended within the token limit.
    pub fn not_cut_off(&mut self) {
        self.cut_offs = 0;
    }

    /// A tool call `name` with `input` is about to run. Reports are not counted: their own allowance
    /// ([`Repairs::rejected_report`]) applies.
    pub fn repeated(&mut self, name: &str, input: &Value, summary: &str) -> Repeat {
        if name == Tool::ReportResult.name() {
            return Repeat::Fresh;
        }
        let same = self
            .last_call
            .as_ref()
            .is_some_and(|(last_name, last_input)| last_name == name && last_input == input);
        if same {
            self.repeats += 1;
        } else {
            self.last_call = Some((name.to_owned(), input.clone()));
            self.repeats = 1;
        }
        match self.repeats {
            n if n < REPEATS_NOTED => Repeat::Fresh,
            n if n == REPEATS_NOTED => Repeat::Noted(format!(
                "\n\nNote: this is the same {name} call, with the same arguments, {n} times in a row; its \
                 result will not change. Do something different, or call report_result. One more identical \
                 call ends your session as a loop."
            )),
            n => Repeat::Looping(format!(
                "repeated the same {name} call ({summary}) {n} times in a row, after a note that it was \
                 looping"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_rejected_report_is_fed_back_until_the_repairs_run_out() {
        let mut repairs = Repairs::new(2);
        let first = repairs
            .rejected_report("planner", "tier_path: must end in t5")
            .unwrap();
        assert!(
            first.starts_with(
                "report_result was not accepted: its `output` does not match the planner schema:\n\
                 tier_path: must end in t5\nFix every problem"
            ),
            "{first}"
        );
        assert!(first.ends_with("(1 more try after this one)."), "{first}");
        let second = repairs.rejected_report("planner", "a\nb").unwrap();
        assert!(second.ends_with("(this is your last chance)."), "{second}");
        assert_eq!(
            repairs.rejected_report("planner", "a\nb").unwrap_err(),
            "did not fix its report in 2 repairs in the same conversation; its output still does not match \
             the planner schema:\na\nb"
        );
        let mut none = Repairs::new(0);
        assert_eq!(
            none.rejected_report("squad-lead", "x").unwrap_err(),
            "reported an output that does not match the squad-lead schema:\nx"
        );
    }

    #[test]
    fn one_reminder_to_report_then_the_agent_stops() {
        let mut repairs = Repairs::new(3);
        let reminder = repairs.ended_without(Tool::ReportResult, true).unwrap();
        assert!(
            reminder.contains("call report_result now with `status`"),
            "{reminder}"
        );
        assert!(reminder.contains("`output` as the Output section"), "{reminder}");
        assert!(
            reminder.contains(
                r#"Expected arguments: {"status": "done" | "partial" | "blocked", "summary": string"#
            ),
            "{reminder}"
        );
        assert_eq!(
            repairs.ended_without(Tool::ReportResult, true).unwrap_err(),
            "ended its turn without calling report_result, again after a reminder"
        );
        let teachback = Repairs::new(3)
            .ended_without(Tool::SubmitTeachback, false)
            .unwrap();
        assert!(teachback.contains("call submit_teachback now"), "{teachback}");
    }

    #[test]
    fn cut_offs_in_a_row_are_allowed_up_to_the_repairs_and_reset_by_a_whole_reply() {
        let mut repairs = Repairs::new(2);
        let told = repairs.cut_off(1000, Some(2000)).unwrap();
        assert!(told.contains("limit (1000 tokens)"), "{told}");
        assert!(
            told.ends_with("Your next reply may be up to 2000 tokens."),
            "{told}"
        );
        assert!(!repairs.cut_off(2000, None).unwrap().contains("next reply"));
        repairs.not_cut_off();
        repairs.cut_off(2000, None).unwrap();
        repairs.cut_off(2000, None).unwrap();
        assert_eq!(
            repairs.cut_off(2000, None).unwrap_err(),
            "was cut off at the output token limit (2000 tokens) 3 times in a row"
        );
    }

    #[test]
    fn the_same_call_in_a_row_is_noted_then_stopped_and_anything_else_resets_it() {
        let mut repairs = Repairs::new(3);
        let read = json!({"path": "a.rs"});
        assert_eq!(repairs.repeated("read_file", &read, "a.rs"), Repeat::Fresh);
        assert_eq!(repairs.repeated("read_file", &read, "a.rs"), Repeat::Fresh);
        assert_eq!(
            repairs.repeated("read_file", &json!({"path": "b.rs"}), "b.rs"),
            Repeat::Fresh
        );
        assert_eq!(repairs.repeated("read_file", &read, "a.rs"), Repeat::Fresh);
        assert_eq!(repairs.repeated("read_file", &read, "a.rs"), Repeat::Fresh);
        let Repeat::Noted(note) = repairs.repeated("read_file", &read, "a.rs") else {
            panic!("the third identical call is noted");
        };
        assert!(note.contains("same read_file call, with the same arguments, 3 times in a row"));
        assert_eq!(
            repairs.repeated("read_file", &read, "a.rs"),
            Repeat::Looping(
                "repeated the same read_file call (a.rs) 4 times in a row, after a note that it was looping"
                    .into()
            )
        );
        let report = json!({"status": "done"});
        for _ in 0..5 {
            assert_eq!(repairs.repeated("report_result", &report, ""), Repeat::Fresh);
        }
    }
}
