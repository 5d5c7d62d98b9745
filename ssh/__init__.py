"""SSH into running jobs: a gateway (asyncssh) that turns an SSH login into ``docker exec`` in the
job's container. access.py decides who gets in (ORM, synchronous), gateway.py serves SSH and
ends sessions of ended jobs, sessions.py runs shells and commands, forward.py serves ``-L`` and
the jump-host role, files.py serves SFTP and scp from the container's files. See docs/ssh.md."""
