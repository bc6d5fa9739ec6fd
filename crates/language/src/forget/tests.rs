use super::*;

fn topic(s: &str) -> Option<(String, bool)> {
    detect(s).map(|r| (r.topic, r.points_back))
}

#[test]
fn requests_are_found_with_their_topic() {
    assert_eq!(topic("Could you please delete my blood type from your memory?"), Some(("blood type".into(), false)));
    assert_eq!(topic("Don't store my passport number anywhere."), Some(("passport number".into(), false)));
    assert_eq!(topic("Oh and forget the name of my landlord"), Some(("name landlord".into(), false)));
    assert_eq!(topic("I'd rather you didn't keep my home phone."), Some(("home phone".into(), false)));
    assert_eq!(topic("Hmm, pretend I never said that."), Some((String::new(), true)));
    assert_eq!(topic("Wipe it."), Some((String::new(), true)));
    assert_eq!(topic("请删掉我的血型"), Some(("血型".into(), false)));
    assert_eq!(topic("我老家的地址不要保存"), Some(("老家 地址".into(), false)));
    assert_eq!(topic("把我欠款的事忘了吧"), Some(("欠款".into(), false)));
    assert!(topic("刚才那句当我没说").is_some_and(|(_, back)| back));
    assert_eq!(topic("算了，把我前任的事都忘了吧。"), Some(("前任".into(), false)));
    assert_eq!(topic("Take my blood type out of your notes."), Some(("blood type".into(), false)));
    assert_eq!(topic("Hmm, about the divorce stuff — I don't want that on file."), Some(("divorce".into(), false)));
    assert!(detect("My locker code is 2231 — forget I said that.").is_some_and(|r| r.points_back && r.stated_before));
}

#[test]
fn the_verbs_of_discarding_and_of_holding_on_are_classes_not_phrases() {
    assert_eq!(topic("Ditch what I said about my credit score."), Some(("credit score".into(), false)));
    assert_eq!(topic("Feel free to toss the detail about my ex."), Some(("ex".into(), false)));
    assert_eq!(topic("You can just disregard my comment about the layoffs."), Some(("comment layoffs".into(), false)));
    assert_eq!(topic("Honestly, scratch my salary from your notes"), Some(("salary".into(), false)));
    assert_eq!(topic("I'd prefer it if you didn't hold onto my tax ID."), Some(("tax ID".into(), false)));
    assert_eq!(topic("Please don't hang onto the name of my clinic"), Some(("name clinic".into(), false)));
    assert_eq!(topic("Let's pretend I didn't bring up the lawsuit"), Some(("lawsuit".into(), false)));
    assert!(topic("Ugh, I shouldn't have brought that up.").is_some_and(|(_, back)| back));
    assert_eq!(topic("Forget that last part."), Some((String::new(), true)));
    assert_eq!(topic("贷款那事儿你别留底了"), Some(("贷款".into(), false)));
    assert_eq!(topic("离婚的事你就当不知道"), Some(("离婚".into(), false)));
    assert_eq!(
        topic("My neighbour told me that in confidence, so don't keep any of it."),
        Some(("neighbour".into(), false))
    );
    assert_eq!(topic("Keep nothing about my landlord, okay?"), Some(("landlord".into(), false)));
    assert_eq!(topic("Nothing about my stepdad should stay in your memory."), Some(("stepdad".into(), false)));
    assert_eq!(topic("Could you forget all of that about my aunt?"), Some(("aunt".into(), false)));
    assert_eq!(topic("Scrub everything regarding my nephew."), Some(("nephew".into(), false)));
    assert_eq!(topic("关于我室友的，全部删除。"), Some(("室友".into(), false)));
    assert_eq!(topic("这事你别记了"), Some((String::new(), true)));
    assert_eq!(topic("My boss asked me to send it by Friday, so don't save that."), Some((String::new(), true)));
    assert_eq!(topic("我表哥的事情，请从记忆里删掉。"), Some(("表哥".into(), false)));
    assert_eq!(topic("跟前男友有关的，统统忘掉。"), Some(("前男友".into(), false)));
}

#[test]
fn statements_and_tasks_are_not_requests() {
    assert_eq!(topic("We should ditch the old CI runners next sprint."), None);
    assert_eq!(topic("You can ignore the warning in the build log."), None);
    assert_eq!(topic("I had to scrap the first draft of the essay."), None);
    assert_eq!(topic("We played Counter-Strike until my friends had to leave."), None);
    assert_eq!(topic("The kids loved the ring-toss booth at my school fair."), None);
    assert_eq!(topic("I always forget my umbrella on the train."), None);
    assert_eq!(topic("Don't forget to water the plants."), None);
    assert_eq!(topic("I forgot my password again yesterday."), None);
    assert_eq!(topic("We had to delete the staging cluster last week."), None);
    assert_eq!(topic("我忘了带伞。"), None);
    assert_eq!(topic("I keep my bike in the garage."), None);
    assert_eq!(topic("Remove the onions from the recipe."), None);
    assert_eq!(topic("Running helps me clear my head."), None);
    assert_eq!(topic("It's easy to get lost and forget that."), None);
    assert_eq!(topic("At the lake I can relax, forget my worries, and read."), None);
    assert_eq!(topic("You never know what tomorrow brings."), None);
    assert_eq!(topic("Honestly I remember nothing about my grandfather."), None);
    assert_eq!(topic("Nothing about the plan should stay the same."), None);
    assert_eq!(topic("Will you forget me when I close this chat?"), None);
    assert_eq!(topic("Can you forget things?"), None);
}
