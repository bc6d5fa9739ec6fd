//! Secrets as people paste them, in English and Chinese, in other words than the rules'
//! own table (`crates/base/src/secrets/tests.rs`): through `POST /v1/events` (content and
//! metadata), an explicit memory, a correction and a feedback note, then every job. The
//! catalogue scan finds none of them anywhere; the look-alikes stay, found by search.

use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app};
use crate::pipeline::{ALL_JOBS, hits, run_jobs};

/// (what a person says, the secret in it)
const SAID: &[(&str, &str)] = &[
    ("Can you keep this for later: AKIA2E0A8F3B244C9986 is the access key id for billing", "AKIA2E0A8F3B244C9986"),
    (
        "export AWS_SECRET_ACCESS_KEY=Kq9vT2rLw8XyZ4bN7mP1sD5fG3hJ6kL0aQeRtYuI",
        "Kq9vT2rLw8XyZ4bN7mP1sD5fG3hJ6kL0aQeRtYuI",
    ),
    (
        "the github token I made today: ghp_Zr8Kq2Lm5Nx7Pv9Bw3Cy6Dt1Fh4Gj0Hk2Mn",
        "ghp_Zr8Kq2Lm5Nx7Pv9Bw3Cy6Dt1Fh4Gj0Hk2Mn",
    ),
    ("our gitlab deploy token glpat-xY7zQ9wE3rT5uI1oP8aS, read only", "glpat-xY7zQ9wE3rT5uI1oP8aS"),
    ("Slack bot token is xoxb-2048-5120-Xa9Bc8Dd7Ee6", "xoxb-2048-5120-Xa9Bc8Dd7Ee6"),
    ("Stripe live secret sk_live_4eC39HqLyjWDarjtT1zdp7dc goes in the vault", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("our OpenAI project key: sk-proj-Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk", "sk-proj-Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk"),
    ("Anthropic console gave me sk-ant-api03-Lm2Nb4Vc6Xz8Aq1Sw3De5", "sk-ant-api03-Lm2Nb4Vc6Xz8Aq1Sw3De5"),
    ("maps widget key AIzaSyD3f8Gh2Jk5Lm9Nq1Rs4Tu7Vw0Xy3Za6Bc", "AIzaSyD3f8Gh2Jk5Lm9Nq1Rs4Tu7Vw0Xy3Za6Bc"),
    (
        r#"{"type": "service_account", "project_id": "acme-prod", "private_key_id": "3f9a1c7e5b2d8f4a6c0e9b1d3f5a7c9e2b4d6f8a", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"}"#,
        "3f9a1c7e5b2d8f4a6c0e9b1d3f5a7c9e2b4d6f8a",
    ),
    (
        "the GCP key file again: \"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIEvAIBADANBgkqhkXyZ\\n-----END PRIVATE KEY-----\"",
        "MIIEvAIBADANBgkqhkXyZ",
    ),
    (
        "DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey=p4Zk9Qm2Rx7Tw5Yv8Bn3Cd6Fg1Hj0Kl==;EndpointSuffix=core.windows.net",
        "p4Zk9Qm2Rx7Tw5Yv8Bn3Cd6Fg1Hj0Kl==",
    ),
    (
        "hugging face token hf_AbCdEfGhIjKlMnOpQrStUvWxYz123456 for the private model",
        "hf_AbCdEfGhIjKlMnOpQrStUvWxYz123456",
    ),
    (
        "curl -H 'Authorization: Bearer 7f3k9Qp2Lx8Wz5Rt1Yv6Bn4Mc0' https://api.example.com/v2/me",
        "7f3k9Qp2Lx8Wz5Rt1Yv6Bn4Mc0",
    ),
    (
        "the session cookie is eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJ1c2VyIjoicml0YSIsImV4cCI6MTcwMDAwMDAwMH0.c2lnbmF0dXJlLXBhcnQtaGVyZQ",
        "eyJ1c2VyIjoicml0YSIsImV4cCI6MTcwMDAwMDAwMH0",
    ),
    ("alerts go to https://hooks.slack.com/services/T0A1B2C3D/B4E5F6G7H/x9Y8z7W6v5U4t3S2r1Q0", "x9Y8z7W6v5U4t3S2r1Q0"),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHI\nQyNTUxOQAAACBbzK9\n-----END OPENSSH PRIVATE KEY-----",
        "QyNTUxOQAAACBbzK9",
    ),
    (
        "here is the deploy key -----BEGIN RSA PRIVATE KEY----- MIIEpAIBAAKCAQEA7d9fLm2 -----END RSA PRIVATE KEY----- thanks",
        "MIIEpAIBAAKCAQEA7d9fLm2",
    ),
    (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBGXyZ3kBCADq8\n-----END PGP PRIVATE KEY BLOCK-----",
        "lQOYBGXyZ3kBCADq8",
    ),
    ("reporting connects with postgres://reporting:Wint3r!Fox@analytics.db.local:5432/metrics", "Wint3r!Fox"),
    ("MONGO_URI=mongodb+srv://svc_app:Mg7pX2qL9@cluster0.ab1cd.mongodb.net/prod", "Mg7pX2qL9"),
    ("cache is redis://:Rd5sEcR3t9@cache.internal:6379/0", "Rd5sEcR3t9"),
    ("backups land on ftp://backup:Tr0ub4dor@files.example.org/nightly", "Tr0ub4dor"),
    ("my netflix password is Pumpkin#Spice88, don't share it", "Pumpkin#Spice88"),
    ("Orca!Pa55 is the password for the guest network", "Orca!Pa55"),
    ("wifi password = Lighthouse_47_blue", "Lighthouse_47_blue"),
    ("Use passcode 902114 to open the side door", "902114"),
    ("my PIN for the debit card: 5521", "5521"),
    ("I changed the admin password to Gr@nite2026 this morning", "Gr@nite2026"),
    ("login: maria.k / password: S0ftPillow#", "S0ftPillow#"),
    ("pwd=Qx7!mLp2 for the staging box", "Qx7!mLp2"),
    ("我的邮箱密码是Xin2024!ok，别告诉别人", "Xin2024!ok"),
    ("路由器口令：tplink8899", "tplink8899"),
    ("支付密码改成了556677", "556677"),
    ("Lemon@2023就是我的QQ密码", "Lemon@2023"),
    ("家里wifi密码 : sunflower99", "sunflower99"),
    ("charge it to 4111 1111 1111 1111, exp 09/27", "4111 1111 1111 1111"),
    ("card no. 5105-1051-0510-5100 for the hotel", "5105-1051-0510-5100"),
    ("Amex 371449635398431 is the company card", "371449635398431"),
    ("the amex reads 3714 496353 98431 on the front", "3714 496353 98431"),
    ("JCB 3530 1113 3330 0000 expires soon", "3530 1113 3330 0000"),
    ("我的信用卡号是6011000990139424", "6011000990139424"),
    ("卡号 4012 8888 8888 1881 有效期 12/26", "4012 8888 8888 1881"),
    ("diners club 3056 930902 5904", "3056 930902 5904"),
    ("银联卡 6212345678901232 用来还款", "6212345678901232"),
    ("wire it to GB29 NWBK 6016 1331 9268 19 by Friday", "NWBK 6016 1331 9268"),
    ("IBAN: FR1420041010050500013M02606", "FR1420041010050500013M02606"),
    ("收款账户 IBAN DE44500105175407324931", "DE44500105175407324931"),
    ("my Dutch account NL91ABNA0417164300 for the refund", "NL91ABNA0417164300"),
    ("SSN 536-90-4399 for the W-9", "536-90-4399"),
    ("social security no. 401 88 2753", "401 88 2753"),
    ("my ssn is 512457788 if the bank asks", "512457788"),
    ("passport no. 548312967, issued 2021", "548312967"),
    ("My passport number is C4X9M2T71", "C4X9M2T71"),
    ("护照号码：E12345678", "E12345678"),
    ("身份证号：440524188001010014", "440524188001010014"),
    ("我的身份证是320106198503122814，帮我订票", "320106198503122814"),
    ("请记住证件号码510107199206153426", "510107199206153426"),
    ("DNI 48291736Z para el contrato", "48291736Z"),
    ("national insurance number QQ123456C", "QQ123456C"),
    ("Aadhaar 2345 6789 0123 for the visa form", "6789 0123"),
    ("client_secret: 9fK2mQ7xL4pZ8wR1tY6vB3nC", "9fK2mQ7xL4pZ8wR1tY6vB3nC"),
    ("the API key for the weather service is 7b1e4c9a2f6d8e0b3c5a", "7b1e4c9a2f6d8e0b3c5a"),
    ("访问令牌：a8F3kL9qZ2xW7mN4pR6t", "a8F3kL9qZ2xW7mN4pR6t"),
    ("密钥是 Qm9vZ2xlU2VjcmV0S2V5MTIz", "Qm9vZ2xlU2VjcmV0S2V5MTIz"),
    ("这是我的AWS访问密钥 AKIAQ7XWZ3N5RTYU8KLM，先帮我存着", "AKIAQ7XWZ3N5RTYU8KLM"),
    ("我们的OpenAI密钥：sk-proj-Zx9Cv8Bn7Mq6Wl5Ek4Rj3Th2", "sk-proj-Zx9Cv8Bn7Mq6Wl5Ek4Rj3Th2"),
    ("数据库连接串是 mysql://root:Mima2024x@10.0.0.5:3306/shop", "Mima2024x"),
    ("接口调用要带上 Bearer Tk8Lq2Zp5Xw9Rv3Nm7Hc1 这个令牌", "Tk8Lq2Zp5Xw9Rv3Nm7Hc1"),
    (
        "服务器私钥如下 -----BEGIN EC PRIVATE KEY----- MHcCAQEEIGlvZWxzZUtleQ -----END EC PRIVATE KEY-----",
        "MHcCAQEEIGlvZWxzZUtleQ",
    ),
    ("我在美国的社会安全号码是 287-65-4321", "287-65-4321"),
];

/// Sentences that only look like they hold a secret, with a word to find each by.
const LOOK_ALIKES: &[(&str, &str)] = &[
    ("Order #4002-8911-2231-7745 was delivered to the porch", "porch"),
    ("tracking number 1Z999AA10123456784 shows it in Leipzig", "Leipzig"),
    ("release v3.12.4 is out, build 20240517", "release"),
    ("the standup moved to 2025-03-14 at 09:30", "standup"),
    ("password reset link sent to your inbox", "inbox"),
    ("the password policy requires 12 characters", "policy"),
    ("I forgot my password again, typical Monday", "Monday"),
    ("my password is too short, the site says", "site"),
    ("flight LH 1234 departs from gate B22", "flight"),
    ("invoice INV-2024-000187 is overdue", "overdue"),
    ("the ISBN is 978-3-16-148410-0 for that novel", "novel"),
    ("commit a3f9c2e1b7d4 fixed the flaky login test", "flaky"),
    ("SKU 840-19-2277 restocked at the warehouse", "warehouse"),
    ("the model number is XJ-4410-22 on the dishwasher", "dishwasher"),
    ("postgres://localhost:5432/app connection works now", "connection"),
    ("token expired, please log in again", "expired"),
    ("the api key field was left empty in the form", "field"),
    ("ports 8443 and 9090 are open on the firewall", "firewall"),
    ("the bearer of this letter is my cousin", "cousin"),
    ("Room 4711, building C, floor 3", "building"),
    ("version string 1.0.0-beta+exp.sha.5114f85 in the footer", "footer"),
    ("PIN-compatible board revision 3 arrived", "revision"),
    ("confirmation code ZX81-Q7 for the hotel", "hotel"),
    ("booking reference 5200 8282 8282 8210 for the ferry", "ferry"),
    ("订单号 202405170001234 已发货", "发货"),
    ("快递单号 SF1234567890123 明天到", "明天到"),
    ("我的密码重置链接已经发到邮箱了", "邮箱"),
    ("会议定在2025年3月14日下午3点", "会议"),
    ("版本号 v2.3.1 已上线", "上线"),
    ("学号 20231234 的同学请到办公室", "办公室"),
    ("航班 CA1234 明早起飞", "航班"),
    ("the secret ingredient is smoked paprika", "paprika"),
];

/// Secrets named the way people name them (the naming word before or after the value,
/// across a dash, a colon or "that's my"; "social", "pw", "login", 社保号, 卡号; digit
/// groups with any separator) and sentences that only look like them, in English and
/// Chinese: `{"said": [{text, secret, kind}], "look_alikes": [{text, find}]}`.
const NAMED: &str = include_str!("data/secrets_named.json");

type Pairs = Vec<(String, String)>;

/// (what a person says, the secret in it) and (a look-alike, a word to find it by), of
/// both corpora.
fn corpus() -> (Pairs, Pairs) {
    let named: Value = serde_json::from_str(NAMED).unwrap();
    let rows = |key: &str, a: &str, b: &str| -> Vec<(String, String)> {
        named[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r[a].as_str().unwrap().into(), r[b].as_str().unwrap().into()))
            .collect()
    };
    let (said_named, alike_named) = (rows("said", "text", "secret"), rows("look_alikes", "text", "find"));
    assert!(
        said_named.len() >= 40 && alike_named.len() >= 20,
        "the named corpus holds at least 40 secrets and 20 look-alikes"
    );
    let owned =
        |rows: &[(&str, &str)]| rows.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect::<Vec<_>>();
    let said = owned(SAID).into_iter().chain(said_named).collect();
    let alike = owned(LOOK_ALIKES).into_iter().chain(alike_named).collect();
    (said, alike)
}

/// Whether `logs` hold `secret` as a value of its own: a short number also turns up inside
/// run ids, timestamps and durations ("seconds=0.5521…"), which are not it.
fn mentions(logs: &str, secret: &str) -> Option<usize> {
    logs.match_indices(secret).map(|(at, _)| at).find(|&at| {
        let before = logs[..at].chars().next_back();
        let after = logs[at + secret.len()..].chars().next();
        let joined = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
        !(secret.chars().all(|c| c.is_ascii_digit()) && (joined(before) || joined(after)))
    })
}

async fn say(app: &TestApp, key: &str, user: &str, content: &str, metadata: Value) {
    let response =
        app.post_events(key, &json!({"user_id": user, "role": "user", "content": content, "metadata": metadata})).await;
    assert_eq!(response.status(), 202, "{content}");
}

#[tokio::test]
async fn no_secret_a_person_pastes_is_stored_anywhere_and_look_alikes_stay_searchable() {
    assert!(SAID.len() >= 60 && LOOK_ALIKES.len() >= 30);
    let (said, look_alikes) = corpus();
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest,admin").await;
    for (i, (content, _)) in said.iter().enumerate() {
        say(&app, &key, "ines", content, json!({"turn": i})).await;
    }
    // The same secrets in metadata, at any depth and under any key.
    say(&app, &key, "ines", "metadata only", json!({
        "client": {"headers": {"Authorization": "Bearer 7f3k9Qp2Lx8Wz5Rt1Yv6Bn4Mc0"}, "note": "card 4111 1111 1111 1111"},
        "password": "tulipfield",
        "attachments": [{"text": "我的邮箱密码是Xin2024!ok"}, "IBAN: FR1420041010050500013M02606"],
    })).await;
    // An explicit memory, its correction and a feedback note.
    let made =
        app.post_as(&key, "/v1/users/ines/memories", &json!({"content": "Router admin password is Gr@nite2026"})).await;
    assert_eq!(made.status(), 201);
    let id = made.json::<Value>().await.unwrap()["memory"]["id"].as_str().unwrap().to_owned();
    let patched = app
        .client
        .patch(format!("{}/v1/users/ines/memories/{id}", app.address))
        .bearer_auth(&key)
        .json(&json!({"content": "Router admin password is now Lighthouse_47_blue"}))
        .send()
        .await
        .unwrap();
    assert_eq!(patched.status(), 200);
    let noted = app
        .post_as(
            &key,
            "/v1/feedback",
            &json!({"user_id": "ines", "memory_id": id, "kind": "wrong",
        "note": "it is 4012 8888 8888 1881 now, and the pin is 5521"}),
        )
        .await;
    assert_eq!(noted.status(), 201);
    let extra = ["tulipfield"];

    let secrets: Vec<&str> = said.iter().map(|(_, secret)| secret.as_str()).chain(extra).collect();
    for secret in &secrets {
        assert_eq!(hits(&app, secret).await, vec![], "{secret} after ingest");
    }
    let logs = run_jobs(&app, ALL_JOBS, "2026-09-01T00:00:00Z").await;
    for secret in secrets {
        assert_eq!(hits(&app, secret).await, vec![], "{secret} after every job");
        if let Some(at) = mentions(&logs, secret) {
            panic!(
                "{secret} in the logs: …{}…",
                &logs[logs.floor_char_boundary(at.saturating_sub(120))
                    ..logs.ceil_char_boundary((at + 120).min(logs.len()))]
            );
        }
    }

    for (i, (content, word)) in look_alikes.iter().enumerate() {
        let user = format!("alike{i}");
        say(&app, &key, &user, content, json!({})).await;
        let found =
            app.search(&key, &json!({"user_id": user, "query": word, "kinds": ["event"], "min_score": 0})).await;
        let first = found["results"][0]["content"].as_str().unwrap_or_default();
        assert_eq!(first, content, "a look-alike is stored and found as it was said");
    }
}
