"""The command lines of the gate checks (lesson 6): the rules they decide under, and the disguises and glued
operators a gate must see through. Data only: lesson_6.py asks decide() about them."""

RULES = {
    "deny": ["rm -rf", "sudo", "git push", "curl * | sh"],
    "ask": ["git commit"],
    "allow": ["ls", "cat", "echo", "grep", "git status", "git log"],
}
OPEN = {"deny": ["rm -rf", "sudo"], "ask": [], "allow": ["*"]}  # everything allowed but what is denied

GLUED = [  # (command, the glued token shlex makes of it): every one runs rm -rf after an allowed ls or cat
    ("ls;(rm -rf {t})", ";("), ("ls &&(rm -rf {t})", "&&("), ("ls ||(rm -rf {t})", "||("), ("ls|(rm -rf {t})", "|("),
    ("ls &(rm -rf {t})", "&("), ("(ls)&&rm -rf {t}", ")&&"), ("(ls)|(rm -rf {t})", ")|("), ("ls\n\nrm -rf {t}", "\n\n"),
    ("ls;\nrm -rf {t}", ";\n"), ("ls &\nrm -rf {t}", "&\n"), ("ls|&rm -rf {t}", "|&"), ("ls;$(rm -rf {t})", ""),
    ("ls&&`rm -rf {t}`", ""), ("cat {t} 2>&1;(rm -rf {t})", ";("),
]
# never allowed: ';;' is two ';' (or a syntax error), never a word of ls; a redirection glued to its neighbours still writes
GLUED_NEVER = ["ls;;rm -rf {t}", "cat notes &>{t}.py", "cat notes >|{t}.py", "cat notes&>>{t}.log", "echo x>>{t}.py"]

DISGUISES = [  # each runs rm -rf, or sudo, past a wrapper, an assignment, a folder or a string: never allowed under OPEN
    "bash -c 'rm -rf {t}'", "env rm -rf {t}", "$(echo rm) -rf {t}", 'sh -c "sudo rm {t}"', "FOO=1 rm -rf {t}", "/bin/rm -rf {t}",
    "env /usr/bin/rm -rf {t}", "nohup rm -rf {t}", "xargs rm -rf {t}", "time rm -rf {t}", "nice rm -rf {t}", "command rm -rf {t}",
    "exec rm -rf {t}", "eval rm -rf {t}", "ls &&! rm -rf {t}",
    # a wrapper's options, and their values, are peeled with it
    "nice -n 10 rm -rf {t}", "env -u HOME rm -rf {t}", "time -p rm -rf {t}", "nohup nice -n 5 env -u HOME FOO=1 rm -rf {t}",
]
