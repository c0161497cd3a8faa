package local

import (
	"errors"
	"fmt"
	"io"
)

// defaultAccountLockDir is Config.AccountLockDir's default: it is the
// machine's, shared by every Hoist on it, and emptied at boot.
const defaultAccountLockDir = "/run/lock/hoist"

// maxSlots bounds the slots an instance tries for its account.
const maxSlots = 1000

// errAccountBusy: another Hoist holds the account's lock.
var errAccountBusy = errors.New("the account is in use by another Hoist")

// takeAccount gives the instance the lowest slot that no instance of this
// provider has, whose account no other Hoist holds (Config.AccountLockDir),
// and as which no process runs: processes an earlier instance left (in
// Hoist's PID namespace; processes under an init of their own end with it)
// are killed first, and a slot whose leftovers do not end is skipped. The
// instance holds the account's lock until it has stopped.
func (in *instance) takeAccount() error {
	p := in.p
	for s := 0; s < maxSlots; s++ {
		if !p.reserveSlot(s) {
			continue
		}
		u, lock, err := p.claimAccount(s)
		if errors.Is(err, errAccountBusy) {
			p.releaseSlot(s)
			continue
		}
		if err != nil {
			p.releaseSlot(s)
			return err
		}
		in.mu.Lock()
		in.slot, in.user, in.accountLock = s, u, lock
		in.mu.Unlock()
		return nil
	}
	return fmt.Errorf("local: no account is free among %d slots", maxSlots)
}

// claimAccount locks the account of slot s and ends what still runs as it.
func (p *Provider) claimAccount(s int) (*User, io.Closer, error) {
	u, err := p.cfg.Users(s)
	if err != nil {
		return nil, nil, err
	}
	lock, err := lockAccount(p.cfg.AccountLockDir, u.UID)
	if errors.Is(err, errAccountBusy) {
		p.log.Debug("local: the account of a slot is in use by another Hoist", "slot", s, "user", u.Name)
		return nil, nil, err
	}
	if err != nil {
		// Without the lock, Hoists on this machine may share the account.
		p.log.Warn("local: cannot lock the account of a slot", "slot", s, "user", u.Name, "err", err)
		lock = nil
	}
	n, err := endProcessesOf(u.UID)
	if n > 0 {
		p.log.Warn("local: killed what still ran as the account of a slot before giving it to an instance",
			"slot", s, "user", u.Name, "uid", u.UID, "processes", n)
	}
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		p.log.Error("local: skipping the account of a slot: processes still run as it", "slot", s, "user", u.Name, "err", err)
		return nil, nil, errAccountBusy
	}
	return u, lock, nil
}

// reserveSlot takes slot s for an instance, if no instance has it.
func (p *Provider) reserveSlot(s int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.slots[s] {
		return false
	}
	p.slots[s] = true
	return true
}

// releaseSlot gives slot s back.
func (p *Provider) releaseSlot(s int) {
	p.mu.Lock()
	delete(p.slots, s)
	p.mu.Unlock()
}
