import numpy as np, pandas as pd, warnings
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler, MinMaxScaler, RobustScaler, MaxAbsScaler
from sklearn.impute import SimpleImputer
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor, HistGradientBoostingRegressor
import xgboost as xgb, lightgbm as lgb
from xai_plugins.forest_pipeline import import_pipeline
from xai_plugins.forest import import_model
rng=np.random.default_rng(0)
X=pd.DataFrame(rng.normal(size=(400,4))*[1,100,0.01,5]+[0,1000,0,3],columns=list("abcd")); y=X.a+np.sin(X.b/100)+X.c*50+rng.normal(size=400)*0.1
X.iloc[rng.integers(0,400,40),3]=np.nan
for model in [GradientBoostingRegressor(n_estimators=20,max_depth=3), RandomForestRegressor(20,max_depth=6), HistGradientBoostingRegressor(max_iter=20), xgb.XGBRegressor(n_estimators=20,max_depth=4), lgb.LGBMRegressor(n_estimators=20,verbose=-1)]:
    ct=ColumnTransformer([("s",StandardScaler(),["a","c"]),("m",make_pipeline(SimpleImputer(strategy="median"),MinMaxScaler()),["d"])],remainder=RobustScaler())
    p=Pipeline([("ct",ct),("m",model)]).fit(X,y)
    f=import_pipeline(p, import_model)
    Xt=X.copy(); 
    # rows exactly on thresholds: take forest thresholds
    internal=f.left_child>=0
    ths=f.threshold[internal]; fe=f.feature[internal]
    R=X.iloc[:200].copy().reset_index(drop=True)
    for i in range(200):
        k=rng.integers(len(ths)); 
        if np.isfinite(ths[k]): R.iloc[i,fe[k]]=ths[k] if i%2 else np.nextafter(ths[k],-np.inf)
    A=pd.concat([X,R]).reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d=np.abs(f.predict(A)[:,0]-p.predict(A)).max()
    print(type(model).__name__, f, "max diff", d)
