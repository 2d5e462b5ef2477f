"""ORM classes mapped over the store's tables (``schema``), for the writers that add rows through a session
(the A/B verbs' pairs and verdicts) and for tests. The store's reads and writes use ``schema`` directly:
importing this module imports SQLAlchemy's ORM.
"""

from __future__ import annotations

from sqlalchemy.orm import DeclarativeBase, relationship

from . import schema


class Base(DeclarativeBase):
    metadata = schema.metadata


class Machine(Base):
    __table__ = schema.Machine.__table__


class Environment(Base):
    __table__ = schema.Environment.__table__


class Commit(Base):
    __table__ = schema.Commit.__table__


class Run(Base):
    __table__ = schema.Run.__table__

    machine = relationship(Machine)
    environment = relationship(Environment)
    commit = relationship(Commit)


class Benchmark(Base):
    __table__ = schema.Benchmark.__table__


class Metric(Base):
    __table__ = schema.Metric.__table__


class Result(Base):
    __table__ = schema.Result.__table__


class Series(Base):
    __table__ = schema.Series.__table__


class Measurement(Base):
    __table__ = schema.Measurement.__table__


class SeriesCache(Base):
    __table__ = schema.SeriesCache.__table__


class ChangePointRow(Base):
    __table__ = schema.ChangePointRow.__table__


class ABPair(Base):
    __table__ = schema.ABPair.__table__


class ABVerdict(Base):
    __table__ = schema.ABVerdict.__table__


class RunVerdict(Base):
    __table__ = schema.RunVerdict.__table__
