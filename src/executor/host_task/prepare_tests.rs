use super::*;
use turbo_proto::{Command, Exec};

fn exec(env: &[(&str, &str)]) -> Op {
    Op::Exec(Exec {
        command: Command::Argv(vec!["env".into()]),
        chdir: None,
        creates: None,
        removes: None,
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        stdin: None,
        umask: None,
    })
}

fn stat() -> Op {
    Op::Stat {
        path: "/x".into(),
        checksum: None,
        follow: false,
    }
}

#[test]
fn environment_reaches_exec_ops_only_and_the_modules_own_win() {
    let env = vec![("A".to_string(), "1".to_string()), ("B".into(), "2".into())];
    let mut op = Op::Batch(vec![exec(&[("B", "own")]), stat()]);
    add_environment(&mut op, &env);
    assert_eq!(
        op,
        Op::Batch(vec![exec(&[("A", "1"), ("B", "own")]), stat()])
    );
}

#[test]
fn false_condition_keeps_a_yaml_scalars_type() {
    assert_eq!(false_condition("False"), Value::Bool(false));
    assert_eq!(false_condition("0"), Value::from(0));
    assert_eq!(false_condition("foo == 'bar'"), Value::from("foo == 'bar'"));
    assert_eq!(false_condition("007"), Value::from("007"));
}
