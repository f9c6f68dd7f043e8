package main

import (
	"os/exec"
	"syscall"
)

// wrangler dev starts workerd as its child: the check stops the group it
// started, and nothing else.
func procGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func stopGroup(c *exec.Cmd) { _ = syscall.Kill(-c.Process.Pid, syscall.SIGTERM) }

func killGroup(c *exec.Cmd) { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
